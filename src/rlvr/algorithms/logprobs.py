"""Log-probabilities of given tokens under logits, chunked so memory stays small.

    token_logprobs(logits [B, T, V], token_ids [B, T], temperature) -> [B, T]

equals log_softmax(logits / temperature)[b, t, token_ids[b, t]], computed in float32
(float64 for float64 logits) a chunk of rows at a time. logits[b, t] must already be the
distribution for token_ids[b, t]: a causal LM's logits are shifted by one position
relative to its input ids, and the caller does that alignment. Every token id must be a
valid index (use e.g. the pad id at padding positions and mask the result).

The temperature matches the sampler's (rollout/base.py: logprobs are of
logits / temperature), so ratios against the sampler's log-probs are consistent.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from rlvr.algorithms._chunks import (check_logits, chunk_rows_for, compute_dtype, row_blocks,
                                     scaled)


class _TokenLogprobs(torch.autograd.Function):
    """Forward keeps only the per-row logsumexp [N]; backward recomputes softmax per chunk.

    d logp_n / d z_nj = 1[j == y_n] - p_nj, and z = logits / temperature.
    """

    @staticmethod
    def forward(ctx, logits: Tensor, token_ids: Tensor, temperature: float,
                chunk_rows: int) -> Tensor:
        ids = token_ids.reshape(-1, 1)  # [N, 1]
        out = torch.empty(ids.shape[0], dtype=compute_dtype(logits.dtype),
                          device=logits.device)  # [N]
        lse = torch.empty_like(out)  # [N]
        for start, stop, block in row_blocks(logits, chunk_rows):
            z = scaled(block, temperature)  # [C, V]
            lse[start:stop] = torch.logsumexp(z, dim=-1)  # [C]
            out[start:stop] = z.gather(1, ids[start:stop]).squeeze(1) - lse[start:stop]
        ctx.save_for_backward(logits, token_ids, lse)
        ctx.temperature, ctx.chunk_rows = temperature, chunk_rows
        return out.view(token_ids.shape)  # [B, T]

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out: Tensor):
        logits, token_ids, lse = ctx.saved_tensors
        ids = token_ids.reshape(-1, 1)  # [N, 1]
        grad_flat = grad_out.reshape(-1, 1).to(lse.dtype)  # [N, 1]
        grad_logits = torch.empty(logits.shape, dtype=logits.dtype, device=logits.device)
        grad_rows = grad_logits.view(-1, logits.shape[-1])  # [N, V], contiguous
        for start, stop, block in row_blocks(logits, ctx.chunk_rows):
            z = scaled(block, ctx.temperature)  # [C, V]
            probs = torch.exp(z - lse[start:stop, None])  # [C, V]
            g = grad_flat[start:stop]  # [C, 1]
            grad_z = (-probs * g).scatter_add_(1, ids[start:stop], g)  # [C, V]
            grad_rows[start:stop] = (grad_z / ctx.temperature).to(grad_rows.dtype)
        return grad_logits, None, None, None


def token_logprobs(logits: Tensor, token_ids: Tensor, temperature: float = 1.0,
                   chunk_rows: int | None = None) -> Tensor:
    """log_softmax(logits / temperature) gathered at token_ids, chunked over rows.

    logits [B, T, V] (any float dtype), token_ids [B, T] integer in [0, V) -> [B, T]
    float32 (float64 for float64 logits). Differentiable with respect to logits.
    chunk_rows: rows of the flattened [B*T, V] processed at once (default: ~4 MiB of
    float32 per chunk on CPU, ~64 MiB on an accelerator).
    """
    check_logits(logits, temperature)
    if token_ids.shape != logits.shape[:2]:
        raise ValueError(f"token_ids must be [B, T] = {tuple(logits.shape[:2])}, got "
                         f"{tuple(token_ids.shape)}")
    if token_ids.dtype not in (torch.int64, torch.int32, torch.int16, torch.uint8):
        raise TypeError(f"token_ids must be an integer tensor, got {token_ids.dtype}")
    vocab = logits.shape[-1]
    if token_ids.numel() and (token_ids.min() < 0 or token_ids.max() >= vocab):
        raise ValueError(f"token_ids must lie in [0, {vocab}), got values in "
                         f"[{int(token_ids.min())}, {int(token_ids.max())}]")
    rows = chunk_rows_for(logits, chunk_rows)
    return _TokenLogprobs.apply(logits, token_ids.long(), float(temperature), rows)
