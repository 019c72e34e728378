"""Token entropy of the policy from logits, chunked so memory stays small.

    token_entropy(logits [B, T, V], temperature) -> [B, T]

H = -sum_j p_j log p_j with p = softmax(logits / temperature), computed in float32 a
chunk of rows at a time (see _chunks.py for why). Differentiable, for an entropy bonus
(loss -= coef * aggregated entropy); under torch.no_grad it is a cheap metric. Reduce
with aggregation.masked_mean(entropy, mask) or any aggregation.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from rlvr.algorithms._chunks import (check_logits, chunk_rows_for, compute_dtype, row_blocks,
                                     scaled)


def _finite_log_probs(z: Tensor, lse: Tensor) -> Tensor:
    """log p = z - lse, with -inf (a banned token) clamped to the most negative float so
    that p log p = 0 * finite = 0 instead of 0 * -inf = NaN. [C, V], [C] -> [C, V]"""
    return (z - lse[:, None]).clamp(min=torch.finfo(z.dtype).min)


class _TokenEntropy(torch.autograd.Function):
    """Forward keeps logsumexp [N] and H [N]; backward recomputes softmax per chunk.

    H = -sum_j p_j log p_j = lse(z) - sum_j p_j z_j, so dH/dz_j = -p_j (z_j - sum_k p_k z_k)
    = -p_j (log p_j + H), and z = logits / temperature.
    """

    @staticmethod
    def forward(ctx, logits: Tensor, temperature: float, chunk_rows: int) -> Tensor:
        rows = logits.shape[0] * logits.shape[1]
        lse = torch.empty(rows, dtype=compute_dtype(logits.dtype), device=logits.device)  # [N]
        entropy = torch.empty_like(lse)  # [N]
        for start, stop, block in row_blocks(logits, chunk_rows):
            z = scaled(block, temperature)  # [C, V]
            lse_chunk = torch.logsumexp(z, dim=-1)  # [C]
            log_probs = _finite_log_probs(z, lse_chunk)  # [C, V]
            lse[start:stop] = lse_chunk
            entropy[start:stop] = -(torch.exp(log_probs) * log_probs).sum(dim=-1)  # [C]
        ctx.save_for_backward(logits, lse, entropy)
        ctx.temperature, ctx.chunk_rows = temperature, chunk_rows
        return entropy.view(logits.shape[:2])  # [B, T]

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out: Tensor):
        logits, lse, entropy = ctx.saved_tensors
        grad_flat = grad_out.reshape(-1, 1).to(lse.dtype)  # [N, 1]
        grad_logits = torch.empty(logits.shape, dtype=logits.dtype, device=logits.device)
        grad_rows = grad_logits.view(-1, logits.shape[-1])  # [N, V], contiguous
        for start, stop, block in row_blocks(logits, ctx.chunk_rows):
            z = scaled(block, ctx.temperature)  # [C, V]
            log_probs = _finite_log_probs(z, lse[start:stop])  # [C, V]
            grad_z = -torch.exp(log_probs) * (log_probs + entropy[start:stop, None])  # [C, V]
            grad_rows[start:stop] = (grad_z * grad_flat[start:stop]
                                     / ctx.temperature).to(grad_rows.dtype)
        return grad_logits, None, None


def token_entropy(logits: Tensor, temperature: float = 1.0,
                  chunk_rows: int | None = None) -> Tensor:
    """Entropy of softmax(logits / temperature) per position: [B, T, V] -> [B, T].

    float32 result (float64 for float64 logits); differentiable with respect to logits.
    chunk_rows: rows of the flattened [B*T, V] processed at once (default ~4 MiB of
    float32 per chunk on CPU, ~64 MiB on an accelerator).
    """
    check_logits(logits, temperature)
    rows = chunk_rows_for(logits, chunk_rows)
    return _TokenEntropy.apply(logits, float(temperature), rows)
