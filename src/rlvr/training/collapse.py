"""The collapse watch: notice when RL stops learning and starts forgetting.

A run that collapses shows it in three places before anyone reads a curve (entropy
mechanism: Cui et al. 2025, "The Entropy Mechanism of Reinforcement Learning for
Reasoning Language Models"): the policy's entropy falls far below where it started,
the groups' rewards turn uniform (every sample of a prompt scores the same, so GRPO's
advantages are 0 and nothing is learned), and held-out accuracy falls from its best.
Each is a signal here, read from what the run already records:

- entropy: the mean `entropy` of the last `window` trained steps below
  max(entropy_floor, entropy_ratio x the mean of the first `early_steps` trained steps).
  Steps that trained no row (rows_trained == 0) report a placeholder entropy of 0 and
  are left out.
- uniform_groups: the mean `groups_uniform` of the last `window` steps >= uniform_share.
- held_out_drop: the latest held-out accuracy at least `accuracy_drop` below the best
  held-out accuracy so far (the "before" evaluation at step 0 counts).

A signal that turns on gives one warning (with its numbers); it warns again only after
it has turned off. `collapsed()` says whether `stop_signals` of them are on at once.
Pure logic over numbers: no model, no files (the run's side is rlvr.training.guard).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Mapping

from rlvr.training.config_run import WatchConfig

SIGNALS = ("entropy", "uniform_groups", "held_out_drop")


@dataclass
class CollapseWatch:
    cfg: WatchConfig
    entropies: list[tuple[int, float]] = field(default_factory=list)  # (step, entropy)
    uniform: list[tuple[int, float]] = field(default_factory=list)  # (step, share)
    best: tuple[int, float] | None = None  # (step, accuracy), the earliest on a tie
    on: dict[str, dict[str, Any]] = field(default_factory=dict)  # signal -> its numbers
    warnings: list[dict[str, Any]] = field(default_factory=list)  # every onset, in order

    def observe_step(self, metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Read one step's metrics line; the warnings of signals that turned on."""
        step = int(metrics["step"])
        entropy, share = metrics.get("entropy"), metrics.get("groups_uniform")
        if _number(entropy) and metrics.get("rows_trained", 1) != 0:
            self.entropies.append((step, float(entropy)))
        if _number(share):
            self.uniform.append((step, float(share)))
        return (self._update(step, "entropy", self._entropy_numbers())
                + self._update(step, "uniform_groups", self._uniform_numbers()))

    def observe_eval(self, step: int, accuracy: float) -> list[dict[str, Any]]:
        """Read one held-out accuracy; the warning if the drop signal turned on."""
        if not _number(accuracy):
            return []
        if self.best is None or accuracy > self.best[1]:
            self.best = (step, float(accuracy))
        drop = self.best[1] - accuracy
        numbers = None
        if self.cfg.accuracy_drop > 0 and drop >= self.cfg.accuracy_drop - 1e-12:
            numbers = {"accuracy": accuracy, "best": self.best[1], "best_step": self.best[0],
                       "drop": drop, "threshold": self.cfg.accuracy_drop}
        return self._update(step, "held_out_drop", numbers)

    def collapsed(self) -> bool:
        return len(self.on) >= self.cfg.stop_signals

    def stop_reason(self, step: int) -> dict[str, Any]:
        """What summary.json's `stopped` records when the watch ends the run."""
        names = [name for name in SIGNALS if name in self.on]
        return {"reason": "collapse", "step": step, "signals": {n: self.on[n] for n in names},
                "message": f"stopped at step {step}: {' and '.join(names)} "
                           f"({len(names)} signals on, watch.stop_signals="
                           f"{self.cfg.stop_signals})"}

    def _entropy_numbers(self) -> dict[str, Any] | None:
        """The entropy signal's numbers when it is on, else None."""
        c, values = self.cfg, self.entropies
        if len(values) < c.window:
            return None
        thresholds = {"floor": c.entropy_floor} if c.entropy_floor > 0 else {}
        early = None
        if c.entropy_ratio > 0 and len(values) > c.early_steps:
            early = _mean(values[:c.early_steps])
            thresholds["ratio"] = c.entropy_ratio * early
        window = values[-c.window:]
        if not thresholds or _mean(window) >= max(thresholds.values()):
            return None
        return {"entropy": _mean(window), "threshold": max(thresholds.values()),
                "early": early, "window": [window[0][0], window[-1][0]],
                "early_steps": [values[0][0], values[min(c.early_steps, len(values)) - 1][0]]}

    def _uniform_numbers(self) -> dict[str, Any] | None:
        c = self.cfg
        if c.uniform_share <= 0 or len(self.uniform) < c.window:
            return None
        window = self.uniform[-c.window:]
        share = _mean(window)
        if share < c.uniform_share:
            return None
        return {"share": share, "threshold": c.uniform_share,
                "window": [window[0][0], window[-1][0]]}

    def _update(self, step: int, name: str,
                numbers: dict[str, Any] | None) -> list[dict[str, Any]]:
        """Record whether `name` is on; a warning only when it turns on."""
        if numbers is None:
            self.on.pop(name, None)
            return []
        started = name not in self.on
        self.on[name] = numbers
        if not started:
            return []
        warning = {"step": step, "signal": name, "message": describe(step, name, numbers),
                   **numbers}
        self.warnings.append(warning)
        return [warning]


def describe(step: int, name: str, n: Mapping[str, Any]) -> str:
    """One warning line, with the numbers that set it off."""
    head = f"collapse watch, step {step}: "
    if name == "entropy":
        steps = f"mean of steps {n['window'][0]}-{n['window'][1]}"
        if n["early"] is not None:
            return (head + f"entropy {n['entropy']:.3f} ({steps}) is below "
                    f"{n['threshold']:.3f}; it was {n['early']:.3f} early on "
                    f"(steps {n['early_steps'][0]}-{n['early_steps'][1]})")
        return head + f"entropy {n['entropy']:.3f} ({steps}) is below {n['threshold']:.3f}"
    if name == "uniform_groups":
        return (head + f"{n['share']:.0%} of groups had equal rewards over steps "
                f"{n['window'][0]}-{n['window'][1]} (threshold {n['threshold']:.0%}): "
                "little learning signal")
    return (head + f"held-out accuracy {n['accuracy']:.3f} is {n['drop']:.3f} below its best "
            f"{n['best']:.3f} (step {n['best_step']})")


def _mean(pairs: list[tuple[int, float]]) -> float:
    return sum(value for _, value in pairs) / len(pairs)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value)
