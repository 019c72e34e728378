"""Which training problems each step sees: a fresh seeded permutation per pass over the
data, with a position that checkpoints save, so a resumed run draws the same problems."""

from __future__ import annotations

import random
from typing import Any, Sequence


class PromptOrder:
    def __init__(self, size: int, seed: int) -> None:
        if size < 1:
            raise ValueError("no training records")
        self.size, self.seed = size, seed
        self.epoch, self.position = 0, 0
        self._order = self._permutation(0)

    def _permutation(self, epoch: int) -> list[int]:
        order = list(range(self.size))
        random.Random(f"{self.seed}:{epoch}").shuffle(order)
        return order

    def next(self, count: int) -> list[int]:
        """Indices of the next `count` records (wrapping into a new pass as needed)."""
        picked = []
        while len(picked) < count:
            if self.position == self.size:
                self.epoch, self.position = self.epoch + 1, 0
                self._order = self._permutation(self.epoch)
            take = min(count - len(picked), self.size - self.position)
            picked.extend(self._order[self.position:self.position + take])
            self.position += take
        return picked

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "position": self.position}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.epoch, self.position = int(state["epoch"]), int(state["position"])
        self._order = self._permutation(self.epoch)


def take(records: Sequence[Any], indices: Sequence[int]) -> list[Any]:
    return [records[i] for i in indices]
