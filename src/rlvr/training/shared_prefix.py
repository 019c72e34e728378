"""Completion logits with each distinct prompt run once (GRPO groups share a prompt).

The update needs, for every row, the logits that predict its completion tokens. Rows of
a group repeat the same prompt G times; running the prompt once (batch 1, with grad),
repeating its KV cache G times and running only the completions on top of it gives the
same logits (attention is per row; the cache copies carry the gradient back to the one
prompt pass) with the prompt's forward and backward done once instead of G times. For a
150-token prompt, G = 8 and 32 new tokens that is ~3.5x fewer update FLOPs.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch


def shared_prompt_logits(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                         completion_ids: torch.Tensor, completion_mask: torch.Tensor
                         ) -> torch.Tensor | None:
    """Logits [B, T, V] predicting completion_ids [B, T], from input_ids [B, P+T] laid out
    as rlvr.training.batch packs them (prompt left-padded to P columns). None when no two
    rows share a prompt, or when the model recomputes activations (gradient
    checkpointing turns the KV cache off in training)."""
    if _recomputes_activations(model):
        return None
    rows, width = completion_ids.shape
    prompt_width = input_ids.shape[1] - width
    groups: dict[tuple[int, ...], list[int]] = {}
    for row, (ids, mask) in enumerate(zip(input_ids[:, :prompt_width].tolist(),
                                          attention_mask[:, :prompt_width].tolist())):
        groups.setdefault(tuple(i for i, m in zip(ids, mask) if m), []).append(row)
    if len(groups) == rows:
        return None
    pieces, order = [], []
    for prompt, members in groups.items():
        pieces.append(_group_logits(model, prompt, completion_ids[members],
                                    completion_mask[members]))  # [n, T, V]
        order.extend(members)
    inverse = torch.argsort(torch.tensor(order, device=completion_ids.device))
    return torch.cat(pieces)[inverse]  # [B, T, V] in the batch's row order


def _group_logits(model: Any, prompt: tuple[int, ...], completions: torch.Tensor,
                  mask: torch.Tensor) -> torch.Tensor:
    n, width = completions.shape
    device, length = completions.device, len(prompt)
    head = model(input_ids=torch.tensor([prompt], device=device),
                 position_ids=torch.arange(length, device=device)[None],
                 use_cache=True, logits_to_keep=1)
    cache = getattr(head, "cache", None) or head.past_key_values
    cache.batch_repeat_interleave(n)
    attention = torch.cat([torch.ones(n, length, dtype=mask.dtype, device=device), mask], 1)
    positions = (length + torch.arange(width, device=device)).expand(n, width)  # [n, T]
    tail = model(input_ids=completions, attention_mask=attention, position_ids=positions,
                 use_cache=True, logits_to_keep=width, **{_cache_kwarg(model): cache})
    first = head.logits.expand(n, 1, -1)  # [n, 1, V]: predicts completion token 0
    return torch.cat([first, tail.logits[:, :-1]], dim=1)  # [n, T, V]


def _cache_kwarg(model: Any) -> str:
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def _recomputes_activations(model: Any) -> bool:
    flag = getattr(model, "is_activation_checkpointing", None)  # transformers >= 5.2x
    if flag is None:
        flag = getattr(model, "is_gradient_checkpointing", False)
    return bool(flag)
