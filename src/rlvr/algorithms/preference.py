"""Pairwise preference pieces for reward models (Bradley-Terry): the loss and the
pairwise accuracy, as pure functions of the two reward vectors.

Bradley-Terry models P(chosen beats rejected) = sigmoid(r_chosen - r_rejected); the
reward model is fitted by maximising the log of that probability over the pairs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def bradley_terry_loss(chosen: torch.Tensor, rejected: torch.Tensor) -> torch.Tensor:
    """Mean of -log sigmoid(r_chosen - r_rejected) over the pairs.

    chosen, rejected: [N] rewards of each pair's preferred and dispreferred completion.
    `logsigmoid` rather than log(sigmoid(.)): a large negative margin would round the
    sigmoid to 0 and the log to -inf, where logsigmoid stays finite (about the margin).
    """
    if chosen.shape != rejected.shape or chosen.dim() != 1:
        raise ValueError(f"chosen and rejected must both be [N], got {tuple(chosen.shape)} "
                         f"and {tuple(rejected.shape)}")
    return -F.logsigmoid(chosen - rejected).mean()


def pairwise_accuracy(chosen: torch.Tensor, rejected: torch.Tensor) -> float:
    """Share of pairs the rewards order correctly (chosen above rejected), a tie counting
    half: a constant reward model scores 0.5, the same as a coin. chosen, rejected: [N]."""
    if chosen.shape != rejected.shape or chosen.numel() == 0:
        raise ValueError("pairwise_accuracy needs two non-empty [N] tensors of one shape")
    wins = (chosen > rejected).float() + 0.5 * (chosen == rejected).float()  # [N]
    return float(wins.mean())
