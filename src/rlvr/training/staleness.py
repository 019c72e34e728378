"""How stale a sampled group is, which groups a step keeps, and the staleness metrics.

A policy *version* counts the updates applied to the weights: the run starts at
version 0 (after the warm-start), step s trains weights of version s - 1 and publishes
version s. The synchronous loop samples step s's groups with version s - 1; a group
the producer sampled with version v is `lag = (s - 1) - v` versions behind the update
that trains it. With rollout.max_staleness = K a step keeps groups with lag <= K and
drops the others (counted; the stream's next groups take their places).

Pure functions and small records: no process, no queue (rlvr.training.async_rollouts
feeds them), so a test can hand in any stream of groups.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable


@dataclass
class SampledGroup:
    """One problem's G episodes as the producer sampled them.

    position:      its place in the stream of groups (0, 1, ... from the producers' start;
                   step s's draw holds positions (s - first step) * P .. + P - 1 whichever
                   producer sampled it)
    record_index:  the training record's index (the PromptOrder draw it came from)
    step:          the step the producer drew it for (what the synchronous run draws then)
    version:       the policy version of the weights that sampled every episode of it
    episodes:      [G] rlvr.episodes.runner.Episode
    generate_s:    its share of the producer's generation seconds
    producer_idle_s: the producer's idle seconds so far (cumulative; waiting for room)
    verdicts:      [G] Verdict, graded by the producer (empty until then)
    scores:        [G] the graded scores, as grade_episodes gives them (before the
                   trainer's reward shaping)
    verify_s:      its share of the producer's grading seconds
    producer:      which producer sampled it (0 .. rollout.producers - 1)
    prefix:        its shard's prefix-reuse counters (rlvr.rollout.base.prefix_counters,
                   the increase over the shard's sampling; a draw is one shard unless
                   sampling.generation_shards > 1) on the shard's first group; {} on the
                   others
    served_version: the policy version the engine said sampled it (a vLLM server's own
                   record of the weights it held; the producer checked it is `version`);
                   None for an engine that samples the producer's own copy
    """

    position: int
    record_index: int
    step: int
    version: int
    episodes: list[Any] = field(default_factory=list)
    generate_s: float = 0.0
    producer_idle_s: float = 0.0
    verdicts: list[Any] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    verify_s: float = 0.0
    producer: int = 0
    prefix: dict[str, int] = field(default_factory=dict)
    served_version: int | None = None

    def lag(self, step: int) -> int:
        """Versions between the weights that sampled it and those that train it at `step`."""
        return (step - 1) - self.version

    def sampled_by(self) -> dict[str, int]:
        """What sampled it, for its rollouts.jsonl lines: policy_version, and
        server_policy_version when the engine reported one."""
        said = {} if self.served_version is None else {"server_policy_version":
                                                       self.served_version}
        return {"policy_version": self.version, **said}


class OrderMismatch(RuntimeError):
    """The producer drew another record than the trainer's data order: a bug."""


@dataclass
class StepGroups:
    """What one step took from the stream: the groups it trains, their lags, the groups
    it dropped as too stale and the seconds it waited for groups to arrive."""

    kept: list[SampledGroup]
    lags: list[int]
    dropped: int
    waited_s: float


def take_step_groups(receive: Callable[[], SampledGroup], next_index: Callable[[], int],
                     step: int, count: int, max_staleness: int) -> StepGroups:
    """`count` groups fresh enough for `step` (lag <= max_staleness), in stream order.

    receive():    the stream's next group (blocks; raises when it cannot give one)
    next_index(): the trainer's own data order, one record index per call; every group
                  taken, kept or dropped, must be that draw (else OrderMismatch), so a
                  checkpoint's data position counts exactly the groups consumed."""
    kept: list[SampledGroup] = []
    lags: list[int] = []
    dropped, waited = 0, 0.0
    while len(kept) < count:
        began = time.perf_counter()
        group = receive()
        waited += time.perf_counter() - began
        expected = next_index()
        if group.record_index != expected:
            raise OrderMismatch(f"producer group {group.position} is record "
                                f"{group.record_index}; the data order says {expected}")
        lag = group.lag(step)
        if lag > max_staleness:
            dropped += 1
            continue
        kept.append(group)
        lags.append(lag)
    return StepGroups(kept, lags, dropped, waited)


def staleness_metrics(lags: list[int], dropped: int, max_staleness: int) -> dict[str, float]:
    """staleness/mean and /max over the trained groups, staleness/lag_<k> the number of
    trained groups k versions behind (k = 0..K), async/dropped_groups."""
    metrics = {"staleness/mean": sum(lags) / len(lags) if lags else 0.0,
               "staleness/max": float(max(lags, default=0)),
               "async/dropped_groups": float(dropped)}
    for k in range(max_staleness + 1):
        metrics[f"staleness/lag_{k}"] = float(sum(1 for lag in lags if lag == k))
    return metrics
