"""DAPO dynamic sampling (Yu et al. 2025): train only on groups whose rewards differ.

A group whose G samples all got the same reward has zero advantage under GRPO-style
estimators, so it adds no gradient but dilutes the batch. DAPO drops such groups and
keeps sampling until the batch holds enough informative groups. This module is pure
bookkeeping; the trainer does the generating:

    acc = GroupAccumulator(target_groups=32, max_draws=4)
    while not acc.done:
        rewards, groups = draw_and_grade()      # rewards [P, G], groups: P items
        acc.add(rewards, groups)
    rewards, groups = acc.result()              # at most target_groups kept groups
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from torch import Tensor


def nonconstant_groups(rewards: Tensor) -> Tensor:
    """[P, G] rewards -> [P] bool: True where the group's rewards are not all equal."""
    if rewards.dim() != 2:
        raise ValueError(f"rewards must be [P, G], got shape {tuple(rewards.shape)}")
    return (rewards != rewards[:, :1]).any(dim=1)  # [P]


@dataclass
class GroupAccumulator:
    """Collects groups with nonzero reward variance until `target_groups` or `max_draws`.

    target_groups: groups one training batch needs.
    max_draws:     how many generation rounds to try before giving up and training on
                   what was kept (possibly fewer groups, possibly none: check `result`).
    """

    target_groups: int
    max_draws: int
    draws: int = 0
    groups_seen: int = 0
    groups_informative: int = 0
    _rewards: list[Tensor] = field(default_factory=list)
    _groups: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.target_groups < 1 or self.max_draws < 1:
            raise ValueError(f"target_groups and max_draws must be >= 1, got "
                             f"{self.target_groups} and {self.max_draws}")

    @property
    def kept(self) -> int:
        return len(self._groups)

    @property
    def full(self) -> bool:
        return self.kept >= self.target_groups

    @property
    def done(self) -> bool:
        return self.full or self.draws >= self.max_draws

    def add(self, rewards: Tensor, groups: Sequence[Any]) -> Tensor:
        """Record one draw: rewards [P, G] and its P groups (any per-group payload).

        Keeps the nonconstant groups, in order, up to the target. Returns the [P] bool
        mask of groups that were informative (kept or not, if the batch was full).
        """
        if len(groups) != rewards.shape[0]:
            raise ValueError(f"got {len(groups)} groups for rewards of shape "
                             f"{tuple(rewards.shape)}")
        if self._rewards and rewards.shape[1] != self._rewards[0].shape[0]:
            raise ValueError(f"every draw must have the same group size; got G="
                             f"{rewards.shape[1]} after G={self._rewards[0].shape[0]}")
        informative = nonconstant_groups(rewards)  # [P]
        self.draws += 1
        self.groups_seen += len(groups)
        self.groups_informative += int(informative.sum())
        for index in torch.nonzero(informative).flatten().tolist():
            if self.full:
                break
            self._rewards.append(rewards[index])  # [G]
            self._groups.append(groups[index])
        return informative

    def result(self) -> tuple[Tensor | None, list[Any]]:
        """(rewards [K, G] or None when nothing was kept, the K kept groups), K <= target."""
        if not self._groups:
            return None, []
        return torch.stack(self._rewards), list(self._groups)  # [K, G]

    def stats(self) -> dict[str, float]:
        """Draws used, groups seen / informative / kept, and the informative share
        (1 - the share DAPO filtered out)."""
        seen = self.groups_seen
        return {"draws": float(self.draws), "groups_seen": float(seen),
                "groups_informative": float(self.groups_informative),
                "groups_kept": float(self.kept),
                "informative_fraction": self.groups_informative / seen if seen else 0.0}
