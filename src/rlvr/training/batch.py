"""Pack sampled completions into the tensors the update needs; choose the update's forward.

Layout: prompts left-padded to P columns, completions right-padded to T columns, so
column P + t holds completion token t of every row and the logits that predict it sit
at column P + t - 1. Per-token tensors of the loss are then plain [B, T].

An episode's completion (rlvr.episodes) interleaves the model's tokens with the
environment's (`Completion.loss_mask`). Environment tokens are context: the attention
covers them (`attention_mask`, `span`), the loss does not (`mask`), so they are out of
the loss, the KL and entropy statistics and the response lengths. `mask` may then have
holes; anything that needs a row's length or attention span reads `span`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from rlvr.data.records import TaskRecord
from rlvr.rollout.base import Completion, KeptActivations, RolloutEngine
from rlvr.training.config import TrainConfig
from rlvr.update_paths import RunShape, UpdatePath, resolve_update_path


@dataclass
class PackedBatch:
    input_ids: torch.Tensor       # [B, P+T] prompt (left-padded) + completion (right-padded)
    attention_mask: torch.Tensor  # [B, P+T] 1 = real token
    position_ids: torch.Tensor    # [B, P+T]
    completion_ids: torch.Tensor  # [B, T]
    mask: torch.Tensor            # [B, T] 1 = completion token the model sampled
    old_logprobs: torch.Tensor    # [B, T] sampler log-probs (0 on padding)
    truncated: torch.Tensor       # [B] bool
    # Per row, the sampler's kept activations, when every row has them; the replay
    # update path then runs from them instead of recomputing (rlvr.accel.update.replay).
    activations: tuple[KeptActivations, ...] | None = None

    @property
    def width(self) -> int:
        return self.completion_ids.shape[1]

    @property
    def span(self) -> torch.Tensor:
        """[B, T] 1 = a real completion token, the model's or the environment's: the
        completion's part of the attention (`mask` marks the model's tokens only)."""
        return self.attention_mask[:, -self.width:]

    @property
    def has_environment_tokens(self) -> bool:
        """Some row holds tokens the environment wrote (an episode's, mid-completion)."""
        return bool((self.mask != self.span).any())

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
    sampled = torch.zeros((batch, width), dtype=torch.long)  # [B, T] 1 = the model's token
    for i, c in enumerate(completions):
        start = prompt_width - len(c.prompt_ids)
        ids[i, start:prompt_width] = torch.tensor(c.prompt_ids, dtype=torch.long)
        ids[i, prompt_width:prompt_width + len(c.token_ids)] = torch.tensor(c.token_ids,
                                                                             dtype=torch.long)
        attention[i, start:prompt_width + len(c.token_ids)] = 1
        if c.logprobs:
            old[i, :len(c.logprobs)] = torch.tensor(c.logprobs, dtype=torch.float32)
        sampled[i, :len(c.token_ids)] = 1 if c.loss_mask is None else torch.tensor(
            _loss_mask(c), dtype=torch.long)
    positions = (attention.cumsum(-1) - 1).clamp(min=0)  # [B, P+T]
    truncated = torch.tensor([c.truncated for c in completions], dtype=torch.bool)
    kept = tuple(c.activations for c in completions)
    return PackedBatch(ids.to(device), attention.to(device), positions.to(device),
                       ids[:, prompt_width:].to(device), sampled.to(device),
                       old.to(device), truncated.to(device),
                       None if any(k is None for k in kept) else kept)


def _loss_mask(c: Completion) -> list[int]:
    """An episode's loss mask, checked: one 0/1 per token id."""
    mask = list(c.loss_mask or ())
    if len(mask) != len(c.token_ids) or not set(mask) <= {0, 1}:
        raise ValueError(f"Completion.loss_mask must be one 0/1 per token id: {len(mask)} "
                         f"values for {len(c.token_ids)} tokens, values {sorted(set(mask))}")
    return mask


def choose_update_path(cfg: TrainConfig, model: Any, engine: RolloutEngine, tokenizer: Any,
                       render: Callable[[TaskRecord], str],
                       records: Sequence[TaskRecord]) -> UpdatePath:
    """The run's update forward (`update.path`, rlvr.update_paths), resolved once, before
    any training: a path asked for by name that cannot run is a ConfigError naming the
    field. `auto` weighs the paths at the run's shape (a typical prompt's length)."""
    s, a = cfg.sampling, cfg.algorithm
    no_activations = ("rollout.max_staleness >= 1: the producer keeps its activations"
                      if cfg.rollout.asynchronous
                      else "sampling.reuse_activations is false" if not s.reuse_activations
                      else "algorithm.dynamic_sampling mixes several draws' groups"
                      if a.dynamic_sampling
                      else "episodes with environment turns keep no activations"
                      if cfg.episodes.max_turns > 1
                      else f"engine {s.engine!r} keeps no activations for this model"
                      if not engine.capabilities.keeps_activations else "")
    prompts = [len(tokenizer(render(r), add_special_tokens=False)["input_ids"])
               for r in records[:32]]
    shape = RunShape(groups=s.prompts_per_step // a.minibatches, group_size=s.group_size,
                     prompt_tokens=sorted(prompts)[len(prompts) // 2] if prompts else 1,
                     completion_tokens=s.max_new_tokens, no_activations=no_activations)
    return resolve_update_path(cfg.update.path, model, shape)
