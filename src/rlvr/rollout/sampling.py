"""Next-token sampling: top-k / top-p (nucleus) filtering of logits and exact draws from
probabilities."""

from __future__ import annotations

import torch

_BLOCK = 256  # tokens per block of the two-level inverse-CDF draw (sample_tokens)


def filter_logits(logits: torch.Tensor, top_k: int = 0, top_p: float = 1.0) -> torch.Tensor:
    """`logits` [B, V] with tokens outside the top-k and outside the smallest set whose
    probability reaches top_p set to -inf. The most likely token always survives.
    Returns `logits` itself (no copy) when neither filter applies."""
    if top_k and 0 < top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[:, -1:]  # [B, 1]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, dim=-1, descending=True)  # [B, V]
        probs = torch.softmax(sorted_logits, dim=-1)
        before = probs.cumsum(-1) - probs  # mass strictly above each token
        drop_sorted = before >= top_p  # keep tokens until the mass reaches top_p
        drop = torch.zeros_like(drop_sorted).scatter(1, order, drop_sorted)
        logits = logits.masked_fill(drop, float("-inf"))
    return logits


def sample_tokens(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """One token per row of `probs` [B, V] (rows need not be normalised), by inverting
    the cumulative distribution at one uniform draw per row -> [B].

    Exact sampling, and ~20x faster on CPU than `torch.multinomial`, which draws an
    exponential variate for every vocabulary entry (~10 ms a step for 8 x 49k). The
    inversion is two-level: the draw first picks a block of `_BLOCK` tokens from the
    blocks' running sums, then a token from the running sum inside that block, so no
    full-vocabulary running sum (a sequential pass, ~4x the cost of a vectorised sum) is
    built. Sums are in float64 so the last tokens of a large vocabulary keep their mass;
    the tokens drawn equal those of a single float64 running sum over the whole row
    unless the draw lies within float64 rounding (~1e-16 relative) of a boundary.
    Zero-probability tokens are never drawn.
    """
    rows, vocab = probs.shape
    block = min(_BLOCK, vocab)
    whole = vocab - vocab % block  # tokens in whole blocks; the rest form a last, short one
    sums = probs[:, :whole].unflatten(-1, (-1, block)).sum(-1, dtype=torch.float64)  # [B, N]
    if whole < vocab:
        tail = probs[:, whole:].sum(-1, keepdim=True, dtype=torch.float64)  # [B, 1]
        sums = torch.cat([sums, tail], dim=-1)
    ends = sums.cumsum(-1)  # [B, N]: running mass at each block's end
    total = ends[:, -1:]  # [B, 1]
    u = torch.rand((rows, 1), generator=generator, dtype=torch.float64,
                   device=probs.device) * total  # [B, 1] in [0, total)
    u = torch.minimum(u, torch.nextafter(total, torch.zeros_like(total)))  # never == total
    chosen = torch.searchsorted(ends, u, right=True)  # [B, 1]: first block ending past u
    before = torch.where(chosen > 0, ends.gather(1, (chosen - 1).clamp(min=0)), 0.0)  # [B, 1]
    first = chosen * block  # [B, 1]
    columns = first + torch.arange(block, device=probs.device)  # [B, block]
    inside = probs.gather(1, columns.clamp(max=vocab - 1)).double()  # [B, block]
    if whole < vocab:
        inside.masked_fill_(columns >= vocab, 0.0)
    cdf = inside.cumsum(-1)  # [B, block]
    # The block's running sum and its vectorised sum may differ in the last bits: keep
    # the offset inside the block's own mass so a zero-mass token is never reached.
    offset = torch.minimum(u - before, torch.nextafter(cdf[:, -1:], torch.zeros_like(u)))
    index = torch.searchsorted(cdf, offset.clamp(min=0.0), right=True)  # [B, 1]
    return (first + index)[:, 0].clamp_(max=vocab - 1)  # in range even for a NaN row
