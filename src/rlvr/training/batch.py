"""Pack sampled completions into the tensors the update needs, and score them.

Layout: prompts left-padded to P columns, completions right-padded to T columns, so
column P + t holds completion token t of every row and the logits that predict it sit
at column P + t - 1. Per-token tensors of the loss are then plain [B, T].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch

from rlvr.algorithms.row_logits import RowLogits
from rlvr.rollout.base import Completion
from rlvr.training.replay import replay_logits
from rlvr.training.shared_prefix import shared_prompt_logits


@dataclass
class PackedBatch:
    input_ids: torch.Tensor       # [B, P+T] prompt (left-padded) + completion (right-padded)
    attention_mask: torch.Tensor  # [B, P+T] 1 = real token
    position_ids: torch.Tensor    # [B, P+T]
    completion_ids: torch.Tensor  # [B, T]
    mask: torch.Tensor            # [B, T] 1 = completion token
    old_logprobs: torch.Tensor    # [B, T] sampler log-probs (0 on padding)
    truncated: torch.Tensor       # [B] bool
    # Per row, the sampler's kept activations (capture, generation row), when every row
    # has them (rlvr.rollout.capture); the update then replays instead of recomputing.
    activations: tuple[Any, ...] | None = None

    @property
    def width(self) -> int:
        return self.completion_ids.shape[1]

    def rows(self, index: torch.Tensor | slice) -> "PackedBatch":
        activations = None
        if self.activations is not None:
            kept = torch.arange(len(self.activations))[index].reshape(-1).tolist()
            activations = tuple(self.activations[i] for i in kept)
        return PackedBatch(*(t[index] for t in (self.input_ids, self.attention_mask,
                                                 self.position_ids, self.completion_ids,
                                                 self.mask, self.old_logprobs,
                                                 self.truncated)), activations)


def pack(completions: Sequence[Completion], pad_id: int, device: torch.device) -> PackedBatch:
    batch = len(completions)
    prompt_width = max(len(c.prompt_ids) for c in completions)
    width = max(1, max(len(c.token_ids) for c in completions))
    ids = torch.full((batch, prompt_width + width), pad_id, dtype=torch.long)
    attention = torch.zeros((batch, prompt_width + width), dtype=torch.long)
    old = torch.zeros((batch, width), dtype=torch.float32)
    for i, c in enumerate(completions):
        start = prompt_width - len(c.prompt_ids)
        ids[i, start:prompt_width] = torch.tensor(c.prompt_ids, dtype=torch.long)
        ids[i, prompt_width:prompt_width + len(c.token_ids)] = torch.tensor(c.token_ids,
                                                                             dtype=torch.long)
        attention[i, start:prompt_width + len(c.token_ids)] = 1
        if c.logprobs:
            old[i, :len(c.logprobs)] = torch.tensor(c.logprobs, dtype=torch.float32)
    positions = (attention.cumsum(-1) - 1).clamp(min=0)  # [B, P+T]
    truncated = torch.tensor([c.truncated for c in completions], dtype=torch.bool)
    kept = tuple(c.extra.get("activations") for c in completions)
    return PackedBatch(ids.to(device), attention.to(device), positions.to(device),
                       ids[:, prompt_width:].to(device), attention[:, prompt_width:].to(device),
                       old.to(device), truncated.to(device),
                       None if any(k is None for k in kept) else kept)


def completion_logits(model: Any, batch: PackedBatch) -> RowLogits:
    """Logits predicting each completion token: [B, T, V] as RowLogits (each distinct
    position's row once; only T+1 positions computed). From the sampler's kept
    activations when that is exact (rlvr.training.replay); else rows that share a prompt
    run it once (rlvr.training.shared_prefix)."""
    replayed = replay_logits(model, batch.input_ids, batch.attention_mask,
                             batch.completion_ids, batch.mask, batch.activations)
    if replayed is not None:
        return replayed
    shared = shared_prompt_logits(model, batch.input_ids, batch.attention_mask,
                                  batch.completion_ids, batch.mask)
    if shared is not None:
        return shared
    out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                position_ids=batch.position_ids, logits_to_keep=batch.width + 1)
    return RowLogits.of(out.logits[:, :-1])  # [B, T, V] rows, a view
