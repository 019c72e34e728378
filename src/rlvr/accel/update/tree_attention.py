"""Attention for packed GRPO groups that computes only the query/key pairs the tree allows.

rlvr.accel.update.shared_prefix packs each group into one row [prompt | completion 1 | ... |
completion n] in which prompt tokens are causal among themselves and each completion
token sees the whole prompt and the earlier tokens of its own completion. A dense kernel
with the 4D tree mask pays for all (p + n*T)^2 pairs although only ~p^2/2 + n*T*(p + T/2)
are allowed: for p = 95, n = 8, T = 32 that is ~3.4x the useful work. This attention
function splits the row instead:

- prompt queries against prompt keys, causal: one SDPA over [groups, heads, P, P]
  (P = longest prompt; a shorter prompt's extra positions are computed and dropped);
- each completion's queries against [its group's prompt keys | its own keys] with a
  [T, P + T] mask (own prompt visible, own tokens causal): one SDPA batched over all
  members as [members, heads, T, P + T], GQA without repeating key heads (enable_gqa);

and scatters the outputs back into packed order. Index gathers and a cat are all it
adds, so autograd differentiates it as is.

It plugs into transformers' attention dispatch (`AttentionInterface.register`): the
model forward receives `tree_layout=<TreeLayout>`, and transformers passes extra forward
kwargs through every decoder layer to the attention function. The dispatch reads
`config._attn_implementation`, so `tree_attention_enabled` switches it for the packed
forward only and restores it on exit, error included. Under activation checkpointing
the backward recomputes layers after that exit, so the context also wraps each
checkpointed layer's function to switch during its recompute.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

import torch
import torch.nn.functional as F
from transformers import AttentionInterface

from rlvr.models.families import llama_family

TREE_ATTENTION = "rlvr_tree"  # the name registered with transformers' AttentionInterface
TREE_BASE_ATTENTION = ("sdpa", "eager")  # configured implementations the tree may replace


@dataclass
class TreeLayout:
    """Where every packed token sits, as flat indices into the packed [G * L] positions."""
    groups: int                # G packed rows
    length: int                # L packed row length (padded)
    prompt_width: int          # P longest prompt
    width: int                 # T longest fed completion (>= 1)
    query_index: torch.Tensor  # [M * T] member m's token t (pads repeat its last token)
    key_index: torch.Tensor    # [M * (P + T)] its group's first P positions, then its tokens
    member_mask: torch.Tensor  # [M, 1, T, P + T] bool, True = attend
    source: torch.Tensor       # [G * L] output row in cat(prompt out [G*P], member out [M*T])
    calls: int = 0             # attention calls made with this layout (a routing check)

    @property
    def members(self) -> int:
        return self.member_mask.shape[0]


def build_tree_layout(prompt_lengths: Sequence[int], fed_lengths: Sequence[Sequence[int]],
                      length: int, device: torch.device) -> TreeLayout:
    """Layout of G packed rows: row g is prompt_lengths[g] prompt tokens, then members
    of fed_lengths[g] tokens each, right-padded to `length`. Members feeding no token
    take no part. Pads of a row read the row's first prompt output (finite, unused)."""
    groups, prompt_width = len(prompt_lengths), max(prompt_lengths)
    width = max([1, *(f for fed in fed_lengths for f in fed)])
    source = [g * prompt_width for g in range(groups) for _ in range(length)]  # [G*L]
    members = []  # (row, first position, fed tokens, prompt length) per member
    for g, (p, lengths) in enumerate(zip(prompt_lengths, fed_lengths)):
        source[g * length:g * length + p] = range(g * prompt_width, g * prompt_width + p)
        start = p
        for f in lengths:
            if f > 0:
                out = groups * prompt_width + len(members) * width  # its first output row
                source[g * length + start:g * length + start + f] = range(out, out + f)
                members.append((g, start, f, p))
            start += f
    table = torch.tensor(members, dtype=torch.long, device=device).reshape(-1, 4)  # [M, 4]
    rows, starts, fed, prompts = table.T  # 4 x [M]
    t = torch.arange(width, device=device)  # [T]
    own = torch.minimum(t[None], fed[:, None] - 1)  # [M, T]: pads repeat the last token
    query = rows[:, None] * length + starts[:, None] + own  # [M, T]
    prompt_keys = rows[:, None] * length + torch.arange(prompt_width, device=device)  # [M, P]
    keys = torch.cat([prompt_keys, query], 1)  # [M, P+T]
    see_prompt = torch.arange(prompt_width, device=device)[None] < prompts[:, None]  # [M, P]
    causal = t[None, :] <= t[:, None]  # [T, T]: key s <= query t
    diagonal = torch.eye(width, dtype=torch.bool, device=device)  # [T, T]
    real_key = (t[None, None, :] < fed[:, None, None]) | diagonal  # [M, T, T]
    see_prompt = see_prompt[:, None].expand(-1, width, -1)  # [M, T, P]
    mask = torch.cat([see_prompt, causal & real_key], 2)  # [M, T, P+T]
    return TreeLayout(groups, length, prompt_width, width, query.reshape(-1), keys.reshape(-1),
                      mask[:, None], torch.tensor(source, dtype=torch.long, device=device))


def tree_attention(module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                   attention_mask: torch.Tensor | None, scaling: float | None = None,
                   dropout: float = 0.0, tree_layout: TreeLayout | None = None,
                   sliding_window: int | None = None, softcap: float | None = None,
                   **_: Any) -> tuple[torch.Tensor, None]:
    """query [G, H, L, D], key/value [G, Hkv, L, D] (transformers' attention signature)
    -> output [G, L, H, D] as the tree mask of `tree_layout` would give."""
    if tree_layout is None:
        raise ValueError(f"attention {TREE_ATTENTION!r} needs the forward kwarg tree_layout "
                         "(set by rlvr.accel.update.shared_prefix only)")
    if sliding_window is not None or softcap is not None:
        raise ValueError(f"attention {TREE_ATTENTION!r} supports neither sliding windows nor "
                         f"soft-capping (got sliding_window={sliding_window}, softcap={softcap})")
    layout, (groups, heads, length, dim) = tree_layout, query.shape
    layout.calls += 1
    p, t, gqa = layout.prompt_width, layout.width, key.shape[1] != heads
    prompt_out = F.scaled_dot_product_attention(
        query[:, :, :p], key[:, :, :p], value[:, :, :p], dropout_p=dropout, is_causal=True,
        scale=scaling, enable_gqa=gqa)  # [G, H, P, D]
    pieces = [prompt_out.transpose(1, 2).reshape(groups * p, heads, dim)]  # [G*P, H, D]
    if layout.members:
        member_out = F.scaled_dot_product_attention(
            _member_rows(query, layout.query_index, layout.members),  # [M, H, T, D]
            _member_rows(key, layout.key_index, layout.members),  # [M, Hkv, P+T, D]
            _member_rows(value, layout.key_index, layout.members),  # [M, Hkv, P+T, D]
            attn_mask=layout.member_mask, dropout_p=dropout, scale=scaling,
            enable_gqa=gqa)  # [M, H, T, D]
        pieces.append(member_out.transpose(1, 2).reshape(layout.members * t, heads, dim))
    out = torch.cat(pieces).index_select(0, layout.source)  # [G*L, H, D]
    return out.view(groups, length, heads, dim), None  # [G, L, H, D]


def _member_rows(x: torch.Tensor, index: torch.Tensor, members: int) -> torch.Tensor:
    """x [G, h, L, D] at flat packed positions index [M * span] -> [M, h, span, D]."""
    groups, heads, length, dim = x.shape
    flat = x.transpose(1, 2).reshape(groups * length, heads, dim)  # [G*L, h, D]
    return flat.index_select(0, index).view(members, -1, heads, dim).transpose(1, 2)


AttentionInterface.register(TREE_ATTENTION, tree_attention)


def supports_tree_attention(model: Any) -> bool:
    """The model's decoder layers can run `tree_attention` in place of their attention."""
    config = model.config
    # Llama-family decoder layers call the attention function with the standard
    # arguments only (rlvr.models.families).
    return (llama_family(config)
            and getattr(config, "_attn_implementation", None) in TREE_BASE_ATTENTION)


@contextmanager
def tree_attention_enabled(model: Any) -> Iterator[None]:
    """Within: the model's attention dispatches to `tree_attention`, also when activation
    checkpointing recomputes a layer of this forward later (in the backward). Restored
    on exit, error included; nothing outside the packed forward sees the switch."""
    config = model.config
    checkpointed = [m for m in model.modules() if "_gradient_checkpointing_func" in vars(m)]
    originals = [vars(m)["_gradient_checkpointing_func"] for m in checkpointed]
    try:
        for module, original in zip(checkpointed, originals):
            module._gradient_checkpointing_func = _recompute_with_tree(config, original)
        with _implementation(config, TREE_ATTENTION):
            yield
    finally:
        for module, original in zip(checkpointed, originals):
            module._gradient_checkpointing_func = original


def _recompute_with_tree(config: Any, checkpoint: Callable) -> Callable:
    """A checkpoint function whose layer runs under the tree attention both now and when
    the backward recomputes it."""
    def checkpointed(function: Callable, *args: Any, **kwargs: Any) -> Any:
        def run(*inner: Any, **inner_kwargs: Any) -> Any:
            with _implementation(config, TREE_ATTENTION):
                return function(*inner, **inner_kwargs)
        return checkpoint(run, *args, **kwargs)
    return checkpointed


@contextmanager
def _implementation(config: Any, name: str) -> Iterator[None]:
    before = config._attn_implementation
    config._attn_implementation = name
    try:
        yield
    finally:
        config._attn_implementation = before
