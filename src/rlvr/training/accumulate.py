"""Gradient accumulation: a minibatch's rows in micro-batches, and the micro-batches'
statistics combined into what one pass over the whole minibatch reports.

The loss needs no combining: every micro-batch weights its tokens with the whole
minibatch's aggregation normaliser (rlvr.algorithms.aggregation), so its loss is its
share of the whole and the gradients that add up in `.grad` are the whole's. The
statistics combine by the reduction each one declares (policy losses' `stat_reductions`,
the loop's own): "sum" (shares of the loss), "mean" (a mean over valid tokens: weighted
by each part's count), "min", "max". The same rules serve parts on several ranks.
"""

from __future__ import annotations

from typing import Mapping

import torch


def micro_batches(rows: torch.Tensor, tokens: torch.Tensor | None, max_rows: int = 0,
                  max_tokens: int = 0) -> list[torch.Tensor]:
    """Consecutive pieces of `rows` [b] (row indices), each at most `max_rows` rows and
    `max_tokens` tokens, counting `tokens` [b] per row (needed only with a token budget;
    0 = no limit; a row longer than the budget goes alone). No limit, or one row:
    [rows] itself, no copy."""
    if (max_rows <= 0 and max_tokens <= 0) or rows.numel() <= 1:
        return [rows]
    if max_tokens <= 0:
        return list(rows.split(max_rows))
    if tokens is None:
        raise ValueError("a token budget needs the rows' token counts")
    sizes, size, used = [], 0, 0
    for count in tokens.tolist():
        if size and (used + count > max_tokens or size == max_rows):
            sizes.append(size)
            size, used = 0, 0
        size, used = size + 1, used + count
    sizes.append(size)
    return list(rows.split(sizes))


def combine_stats(parts: list[tuple[dict[str, float], float]],
                  reductions: Mapping[str, str]) -> dict[str, float]:
    """One dict from (stats, valid tokens) per part; `reductions` names each statistic's
    rule ("sum", "mean", "min", "max"; unnamed: "mean"). A part without valid tokens
    adds nothing to a mean, min or max (all empty: the first part's value, the empty
    batch's own convention)."""
    combined: dict[str, float] = {}
    for name in parts[0][0]:
        how = reductions.get(name, "mean")
        values = [(stats[name], count) for stats, count in parts]
        if how == "sum":
            combined[name] = sum(value for value, _ in values)
            continue
        counted = [(value, count) for value, count in values if count > 0]
        if not counted:
            combined[name] = values[0][0]
        elif how == "mean":
            total = sum(count for _, count in counted)
            combined[name] = sum(value * count for value, count in counted) / total
        elif how in ("min", "max"):
            combined[name] = (min if how == "min" else max)(value for value, _ in counted)
        else:
            raise ValueError(f"statistic {name!r}: unknown reduction {how!r} "
                             "(sum, mean, min, max)")
    return combined
