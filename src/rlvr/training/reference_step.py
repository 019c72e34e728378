"""A plain GRPO step, written to be read: what the trainer's update computes, minus speed.

The trainer (loop.py) takes the same gradient by faster routes: prompts shared within a
group, attention over only the allowed pairs, the sampler's kept activations replayed
(rlvr.update_paths), logits stored once per distinct row (rlvr.algorithms.row_logits),
and named, pluggable losses composed by one objective (rlvr.algorithms.objective). This
file does the same step the obvious way, one row at a time: dense logits, `log_softmax`,
`gather`, the clipped surrogate, a token mean. It does not call the objective, so it can
check it: tests/test_update_paths.py compares the objective's gradient on every update
path with the gradient of `grpo_loss`, and one `grpo_step` with one step on the objective.
Episodes (rlvr.episodes) too: a completion that interleaves the model's tokens with the
environment's trains on the model's tokens only (tests/test_episode_gradients.py).
"""

from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn.functional as F


def group_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """GRPO: each reward minus its group's mean, over its group's (unbiased) std.
    rewards [P, G] -> [P, G]; a group whose rewards are all equal gets exactly 0."""
    mean = rewards.mean(dim=1, keepdim=True)  # [P, 1]
    std = rewards.std(dim=1, keepdim=True)  # [P, 1]
    advantages = (rewards - mean) / (std + eps)
    return torch.where(std == 0, torch.zeros_like(advantages), advantages)


def completion_logprobs(model: Any, prompt: Sequence[int], completion: Sequence[int],
                        temperature: float = 1.0) -> torch.Tensor:
    """log pi(token | everything before it) for each completion token: [T]. An episode's
    environment tokens are in `completion` as the model read them, so the model's later
    tokens are conditioned on them; they get a log-prob here like any token."""
    ids = torch.tensor([list(prompt) + list(completion)])  # [1, p + T]
    logits = model(input_ids=ids).logits[0]  # [p + T, V]: position i predicts token i + 1
    predicting = logits[len(prompt) - 1:len(prompt) - 1 + len(completion)]  # [T, V]
    logprobs = F.log_softmax(predicting.float() / temperature, dim=-1)  # [T, V]
    return logprobs.gather(1, torch.tensor(completion)[:, None])[:, 0]  # [T]


def grpo_loss(model: Any, prompts: Sequence[Sequence[int]],
              completions: Sequence[Sequence[int]], old_logprobs: Sequence[torch.Tensor],
              advantages: torch.Tensor, eps_low: float = 0.2, eps_high: float = 0.2,
              temperature: float = 1.0,
              loss_masks: Sequence[Sequence[int]] | None = None) -> torch.Tensor:
    """The clipped surrogate (PPO, Schulman et al. 2017), averaged over every completion
    token the model sampled in the batch (DAPO's token mean).

    Per token t of row i, with ratio r = pi(t) / pi_old(t) and advantage A_i:
        loss_t = -min(r * A_i, clip(r, 1 - eps_low, 1 + eps_high) * A_i)
    Row i of prompts/completions/old_logprobs ([T_i] each) has advantage advantages[i].
    loss_masks[i] (episodes): 1 per token the model sampled, 0 per token the environment
    wrote. Environment tokens are context, not actions: no loss, not in the mean.
    """
    total, tokens = torch.zeros(()), 0
    for i, (prompt, completion, old, advantage) in enumerate(zip(prompts, completions,
                                                                 old_logprobs, advantages)):
        if not completion:
            continue
        sampled = [True] * len(completion) if loss_masks is None else loss_masks[i]
        own = torch.tensor(sampled, dtype=torch.bool)  # [T] the model's tokens
        logprobs = completion_logprobs(model, prompt, completion, temperature)  # [T]
        ratio = torch.exp(logprobs[own] - old[own])  # [T_own]
        clipped = ratio.clamp(1 - eps_low, 1 + eps_high)  # [T_own]
        total = total - torch.minimum(ratio * advantage, clipped * advantage).sum()
        tokens += int(own.sum())
    return total / max(tokens, 1)


def grpo_step(model: Any, optimizer: torch.optim.Optimizer, prompts: Sequence[Sequence[int]],
              completions: Sequence[Sequence[int]], old_logprobs: Sequence[torch.Tensor],
              rewards: torch.Tensor, loss_masks: Sequence[Sequence[int]] | None = None,
              **clip: float) -> float:
    """One optimizer step on a batch of P prompts x G completions (rows prompt-major:
    row p * G + g); rewards [P, G]. Returns the loss."""
    advantages = group_advantages(rewards).flatten()  # [P * G]
    optimizer.zero_grad(set_to_none=True)
    loss = grpo_loss(model, prompts, completions, old_logprobs, advantages,
                     loss_masks=loss_masks, **clip)
    loss.backward()
    optimizer.step()
    return float(loss.detach())
