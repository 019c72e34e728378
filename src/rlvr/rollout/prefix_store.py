"""Keys and values an episode's next turn continues (the HF engine's prefix reuse).

An episode's turn k prompt is turn k-1's prompt, the tokens the model sampled and the
environment's observation (rlvr.episodes.runner). Prefilling it whole recomputes every
key and value turn k-1 already computed, with the same weights. So a decode call may
keep, for each row it sampled, the keys/values of the tokens it fed (prompt + sampled)
here; the next call looks each prompt up, and a prompt that starts with a kept row's
tokens prefills only what follows them, on top of those keys and values.

Validity: a kept row is for the one call that follows (the store forgets every row that
call does not continue, e.g. an episode that ended) and for the weights that computed
it (`weights_token`: the model's identity and every parameter's version, which torch
bumps on each in-place update; `sync_weights` also clears the store). Memory: the rows
kept by one call take at most `budget_bytes`; a row past it is not kept (its
continuation prefills in full).

Layout handed to the stepper (`PrefixBatch`): each prompt's kept keys/values are
right-aligned into `width` columns (padding before, `valid` False), and the prompt's
new tokens follow in the suffix batch at positions after them. Attention is by mask and
the keys carry their rotary positions, so a query sees the same keys and values as a
full prefill would (the sums differ only in float rounding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

_FINGERPRINT = 8  # tokens before a split point that index a kept row


@dataclass
class KeptRow:
    """The keys/values of `ids` (in order, positions 0..len-1) for one sampled row."""

    ids: list[int]
    keys: torch.Tensor    # [layers, kv_heads, L, D]
    values: torch.Tensor  # [layers, kv_heads, L, Dv]

    @property
    def nbytes(self) -> int:
        return (self.keys.numel() * self.keys.element_size()
                + self.values.numel() * self.values.element_size())


def weights_token(model: Any) -> tuple[int, tuple[int, ...]]:
    """Changes whenever the model's weights may have: another module, or any parameter
    written in place (an optimizer step)."""
    return id(model), tuple(p._version for p in model.parameters())


class PrefixStore:
    """One call's kept rows, looked up by the next call's prompts."""

    def __init__(self, budget_bytes: float) -> None:
        self.budget = budget_bytes
        self.rows: list[KeptRow] = []
        self.used = 0
        self.weights: Any = None
        # counters since the engine started: prompt tokens prefilled / taken from kept rows
        self.stats = {"prefilled_tokens": 0, "reused_tokens": 0, "rows_not_kept": 0}

    def clear(self) -> None:
        self.rows, self.used, self.weights = [], 0, None

    def match(self, prompts: Sequence[list[int]], weights: Any) -> list[KeptRow | None]:
        """For each prompt the longest kept row whose ids start it (None: none, or the
        rows were computed by other weights); then forget every row (the matched ones
        live on in the returned list until their batch is prefilled)."""
        rows, same = self.rows, weights == self.weights
        self.clear()
        if not rows or not same:
            return [None] * len(prompts)
        index: dict[tuple[int, tuple[int, ...]], list[KeptRow]] = {}
        for row in rows:
            index.setdefault(_key(row.ids, len(row.ids)), []).append(row)
        lengths = sorted({len(row.ids) for row in rows}, reverse=True)
        return [_longest(prompt, index, lengths) for prompt in prompts]

    def keep(self, ids: list[int], keys: torch.Tensor, values: torch.Tensor,
             weights: Any) -> bool:
        """Keep one row's keys/values [layers, kv, len(ids), D] unless past the budget."""
        row = KeptRow(ids, keys, values)
        if self.used + row.nbytes > self.budget or not ids:
            self.stats["rows_not_kept"] += 1
            return False
        self.rows.append(row)
        self.used += row.nbytes
        self.weights = weights
        return True


def _key(ids: Sequence[int], length: int) -> tuple[int, tuple[int, ...]]:
    return length, tuple(ids[max(0, length - _FINGERPRINT):length])


def _longest(prompt: list[int], index: dict, lengths: list[int]) -> KeptRow | None:
    """A prompt's lookup: a dict probe per kept length, then one exact comparison."""
    for length in lengths:
        if length > len(prompt):
            continue
        for row in index.get(_key(prompt, length), ()):
            if prompt[:length] == row.ids:
                return row
    return None


@dataclass
class PrefixBatch:
    """Kept keys/values under a batch of suffixes: prompt b reuses `lengths[b]` tokens of
    `rows[b]` (0 and None: prefills in full), right-aligned into `width` columns."""

    rows: list[KeptRow | None]
    lengths: list[int]
    width: int
    valid: torch.Tensor  # [B, width] bool: a kept key/value sits in the column

    def write(self, keys: torch.Tensor, values: torch.Tensor, n: int = 1) -> None:
        """Fill keys/values [layers, B*n, kv, >= width, D]'s first `width` columns: prompt
        b's kept ones into rows b*n .. b*n+n-1 (the n samples share them)."""
        keys, values = keys.unflatten(1, (-1, n)), values.unflatten(1, (-1, n))
        for b, (row, used) in enumerate(zip(self.rows, self.lengths)):
            if used:
                start = self.width - used
                keys[:, b, :, :, start:self.width] = row.keys[:, None, :, :used]
                values[:, b, :, :, start:self.width] = row.values[:, None, :, :used]


def suffix_batch(prompts: list[list[int]], hits: Sequence[KeptRow | None], pad_id: int,
                 device: torch.device):
    """The left-padded batch a stepper prefills: input_ids, mask, positions [B, S] of
    each prompt's tokens after its kept prefix, and the PrefixBatch under them (None
    when no prompt has one). A prompt always prefills at least its last token: its
    logits start the sampling."""
    used = [min(len(row.ids), len(p) - 1) if row is not None else 0
            for p, row in zip(prompts, hits)]
    suffixes = [p[u:] for p, u in zip(prompts, used)]
    batch, width = len(prompts), max(len(s) for s in suffixes)
    input_ids = torch.full((batch, width), pad_id, dtype=torch.long, device=device)
    mask = torch.zeros((batch, width), dtype=torch.long, device=device)
    for i, s in enumerate(suffixes):  # left padding: the next token is always the last column
        input_ids[i, width - len(s):] = torch.tensor(s, dtype=torch.long)
        mask[i, width - len(s):] = 1
    offset = torch.tensor(used, dtype=torch.long, device=device)[:, None]  # [B, 1]
    positions = (mask.cumsum(-1) - 1).clamp(min=0) + offset  # [B, S]
    cached = max(used)
    if not cached:
        return input_ids, mask, positions, None
    valid = torch.arange(cached, device=device)[None, :] >= cached - offset  # [B, cached]
    prefix = PrefixBatch([r if u else None for r, u in zip(hits, used)], used, cached, valid)
    return input_ids, mask, positions, prefix


class RowKeeper:
    """Copies rows' keys/values out of a decode loop's stepper as the rows leave it,
    within what the store's budget has left; `commit` keeps them under their ids."""

    def __init__(self, store: PrefixStore, weights: Any) -> None:
        self.store, self.weights = store, weights
        self.room = store.budget - store.used
        self.rows: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def take(self, stepper: Any, rows: torch.Tensor, which: torch.Tensor) -> None:
        """Live rows `which` [b] (bool) of the stepper; rows [b]: their generation rows."""
        for i in which.nonzero()[:, 0].tolist():
            kv = stepper.export(i) if self.room > 0 else None
            if kv is None:  # out of room, or a cache whose rows cannot be reused
                self.store.stats["rows_not_kept"] += 1
                continue
            size = sum(t.numel() * t.element_size() for t in kv)
            if size <= self.room:
                self.rows[int(rows[i])], self.room = kv, self.room - size
            else:
                self.store.stats["rows_not_kept"] += 1

    def commit(self, prompts: list[list[int]], sampled: list[list[int]]) -> None:
        """Row r fed prompts[r] + sampled[r] (all, or all but the last token)."""
        for r, (keys, values) in self.rows.items():
            ids = (prompts[r] + sampled[r])[:keys.shape[2]]
            self.store.keep(ids, keys, values, self.weights)
        self.rows = {}


def transformers_cache(prefix: PrefixBatch) -> Any:
    """A transformers DynamicCache holding the prefix's `width` columns [B, kv, width, D]
    per layer (zeros where `valid` is False)."""
    from transformers.cache_utils import DynamicCache

    like = next(row for row in prefix.rows if row is not None)
    layers, kv, _, dk = like.keys.shape
    batch, width = prefix.valid.shape
    keys = like.keys.new_zeros((layers, batch, kv, width, dk))
    values = like.values.new_zeros((layers, batch, kv, width, like.values.shape[-1]))
    prefix.write(keys, values)
    return DynamicCache(ddp_cache_data=[(keys[i], values[i]) for i in range(layers)])


def transformers_cache_row(cache: Any, row: int, mask: torch.Tensor):
    """Row `row`'s keys/values [layers, kv, L, D] at the columns `mask` [C] marks, from a
    transformers cache of plain full-attention layers; None for any other cache (a
    sliding window's or a hybrid model's rows are not kept)."""
    from transformers.cache_utils import DynamicLayer

    layers = getattr(cache, "layers", None)
    if not layers or any(type(layer) is not DynamicLayer for layer in layers):
        return None
    columns = mask.nonzero()[:, 0]  # [L]
    return (torch.stack([layer.keys[row].index_select(1, columns) for layer in layers]),
            torch.stack([layer.values[row].index_select(1, columns) for layer in layers]))
