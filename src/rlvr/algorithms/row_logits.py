"""Log-probs and entropy of completion tokens from logits stored once per distinct row.

The update's logits come as a table of rows, each position of the [B, T] completion
grid pointing at one: a packed GRPO group scores every completion position once and
the last prompt position once for all n members' first token (rlvr.training.
shared_prefix, rlvr.accel.update.replay); padding points at any row. Gathering that into a
dense [B, T, V] copy (and scattering its gradient back) moved ~3 x 50 MB per update for
SmolLM2's 49k vocabulary, and log-probs and entropy each made their own pass over it.
`token_logprobs_and_entropy` reads the table a chunk of rows at a time, once forward
(logsumexp, entropy and the sampled tokens' logits from one exp) and once backward
(one gradient row per table row), in float32:

    logp[b, t] = z[i, y] - lse(z[i])          i = index[b, t], y = token_ids[b, t]
    H[b, t]    = lse(z[i]) - sum_j p_ij z_ij   z = table / temperature, p = softmax(z)

    d/dz_ij: -p_ij * (G_i + E_i * (z_ij - lse_i + H_i)) + sum over (b, t) -> i with y = j of g_bt
    with G_i, E_i the sums of the log-prob and entropy gradients of positions pointing at i.

A table the caller declares `owned` (an update path's own forward output, read by nothing
after the backward) gets its gradient written over it, chunk by chunk, instead of into
a second [R, V] tensor: the two used to be alive together with every saved activation,
at the update's highest point (~0.5 GB each for 64 SmolLM2 completions of ~40 tokens).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor
from torch.autograd.function import once_differentiable

from rlvr.algorithms._chunks import chunk_rows_for, compute_dtype, scaled


@dataclass(frozen=True)
class RowLogits:
    """Logits [B, T, V] as rows of a table: logits[b, t] = table[index[b, t]]."""
    table: Tensor  # [R, V]
    index: Tensor  # [B, T] int64 in [0, R)
    # The table is the caller's own intermediate (no one reads it after the backward),
    # so the backward may overwrite it with its gradient. Never for a leaf that requires
    # grad, or a view of one: its gradient would become its data.
    owned: bool = False

    @classmethod
    def of(cls, logits: Tensor) -> "RowLogits":
        """Dense [B, T, V] logits, as a view when its rows lie evenly in memory (also a
        slice such as a causal LM's logits[:, :-1]), else as a copy."""
        batch, width, vocab = logits.shape
        step, row = logits.stride(0), logits.stride(1)
        if logits.stride(2) == 1 and row >= vocab and step % row == 0 and batch * width:
            per_batch = step // row  # table rows from one batch row to the next
            table = logits.as_strided(((batch - 1) * per_batch + width, vocab), (row, 1))
        else:
            per_batch, table = width, logits.reshape(batch * width, vocab)
        offsets = torch.arange(batch, device=logits.device)[:, None] * per_batch  # [B, 1]
        return cls(table, offsets + torch.arange(width, device=logits.device))

    def dense(self) -> Tensor:
        """The [B, T, V] copy (for callers that need every position's full row)."""
        return self.table[self.index]


def token_logprobs_and_entropy(logits: RowLogits, token_ids: Tensor, temperature: float = 1.0,
                               chunk_rows: int | None = None) -> tuple[Tensor, Tensor]:
    """(log_softmax(z)[b, t, token_ids[b, t]], entropy of softmax(z) at [b, t]), both
    [B, T] float32 (float64 for float64 logits) and differentiable with respect to the
    table; z = logits / temperature. chunk_rows: table rows per chunk (default ~4 MiB of
    float32 on CPU, ~64 MiB on an accelerator)."""
    table, index = logits.table, logits.index
    if table.dim() != 2 or not table.is_floating_point():
        raise ValueError(f"RowLogits.table must be a float [R, V] tensor, got "
                         f"{table.dtype} {tuple(table.shape)}")
    if token_ids.shape != index.shape:
        raise ValueError(f"token_ids must be [B, T] = {tuple(index.shape)}, got "
                         f"{tuple(token_ids.shape)}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    vocab, rows = table.shape[1], table.shape[0]
    for name, values, bound in (("token_ids", token_ids, vocab), ("index", index, rows)):
        if values.numel() and (values.min() < 0 or values.max() >= bound):
            raise ValueError(f"{name} must lie in [0, {bound}), got values in "
                             f"[{int(values.min())}, {int(values.max())}]")
    # without a backward (no grad needed, or not recorded) there is nothing to reuse
    owned = logits.owned and table.requires_grad and torch.is_grad_enabled()
    base = table if table._base is None else table._base
    if owned and base.is_leaf and base.requires_grad:
        raise ValueError("RowLogits.owned: the table is a leaf that requires grad (or a "
                         "view of one), whose data its gradient would overwrite")
    return _RowTokenStats.apply(table, index.long(), token_ids.long(), float(temperature),
                                chunk_rows_for(table, chunk_rows), owned)


class _RowTokenStats(torch.autograd.Function):
    """Forward keeps lse and H per table row [R]; backward recomputes softmax per chunk."""

    @staticmethod
    def forward(ctx, table: Tensor, index: Tensor, token_ids: Tensor, temperature: float,
                chunk_rows: int, owned: bool) -> tuple[Tensor, Tensor]:
        dtype = compute_dtype(table.dtype)
        lse = torch.empty(table.shape[0], dtype=dtype, device=table.device)  # [R]
        entropy = torch.empty_like(lse)  # [R]
        for start in range(0, table.shape[0], chunk_rows):
            stop = min(start + chunk_rows, table.shape[0])
            z = scaled(table[start:stop], temperature)  # [C, V]
            peak = z.amax(-1, keepdim=True)  # [C, 1]
            weights = torch.sub(z, peak).exp_()  # [C, V]: p up to its normaliser
            total = weights.sum(-1)  # [C]
            lse[start:stop] = peak[:, 0] + torch.log(total)
            entropy[start:stop] = lse[start:stop] - _row_dots(weights, z) / total
        flat, ids = index.reshape(-1), token_ids.reshape(-1)  # [N]
        chosen = table[flat, ids].to(dtype) / temperature  # [N]
        logprobs = (chosen - lse[flat]).view(index.shape)  # [B, T]
        ctx.save_for_backward(table, index, token_ids, lse, entropy)
        ctx.temperature, ctx.chunk_rows, ctx.owned = temperature, chunk_rows, owned
        ctx.set_materialize_grads(False)  # an unused output's gradient arrives as None
        return logprobs, entropy[flat].view(index.shape)

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_logprobs: Tensor | None, grad_entropy: Tensor | None):
        table, index, token_ids, lse, entropy = ctx.saved_tensors
        temperature, rows, dtype = ctx.temperature, table.shape[0], lse.dtype
        flat = index.reshape(-1)  # [N]
        logprob_rows = _row_sums(grad_logprobs, flat, rows, dtype)  # [R]
        entropy_rows = None if grad_entropy is None else _row_sums(grad_entropy, flat, rows,
                                                                   dtype)  # [R]
        # [R, V]: over the table itself when owned (each chunk is read before it is
        # written; the index_put_ below reads no logit)
        grad_table = (table.detach() if ctx.owned
                      else torch.empty(table.shape, dtype=table.dtype, device=table.device))
        in_place = table.dtype == dtype  # compute each chunk where it is written
        for start in range(0, rows, ctx.chunk_rows):
            stop = min(start + ctx.chunk_rows, rows)
            z = scaled(table[start:stop], temperature)  # [C, V]
            log_p = torch.sub(z, lse[start:stop, None],
                              out=grad_table[start:stop] if in_place else None)  # [C, V]
            factor = logprob_rows[start:stop, None] * (-1.0 / temperature)  # [C, 1]
            if entropy_rows is not None:  # dH/dz = -p (log p + H)
                log_p.clamp_(min=torch.finfo(dtype).min)  # p = 0 times finite, never NaN
                factor = (log_p + entropy[start:stop, None]).mul_(
                    entropy_rows[start:stop, None] * (-1.0 / temperature)).add_(factor)
            grad = log_p.exp_().mul_(factor)  # [C, V]
            if not in_place:
                grad_table[start:stop] = grad
        if grad_logprobs is not None:  # + g / temperature at each position's own token
            grad_table.index_put_((flat, token_ids.reshape(-1)),
                                  (grad_logprobs.reshape(-1) / temperature).to(table.dtype),
                                  accumulate=True)
        return grad_table, None, None, None, None, None


def _row_sums(grad: Tensor | None, flat: Tensor, rows: int, dtype: torch.dtype) -> Tensor:
    """Per table row [R], the sum of `grad` [B, T] over the positions pointing at it."""
    total = torch.zeros(rows, dtype=dtype, device=flat.device)
    return total if grad is None else total.index_add_(0, flat, grad.reshape(-1).to(dtype))


def _row_dots(weights: Tensor, z: Tensor) -> Tensor:
    """sum_j weights_ij z_ij per row [C] (one pass). A banned token (z = -inf, weight 0)
    gives 0 * -inf = NaN: then the chunk is redone with -inf as the most negative float."""
    dots = torch.linalg.vecdot(weights, z)  # [C]
    if bool(dots.isnan().any()):
        dots = torch.linalg.vecdot(weights, z.clamp(min=torch.finfo(z.dtype).min))
    return dots

