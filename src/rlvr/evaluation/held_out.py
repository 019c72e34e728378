"""One held-out evaluation during training, as a flat row of numbers.

Greedy decoding over every held-out record gives the headline accuracy (pass@1 greedy);
`plan.n` sampled answers for the first `plan.sample_size` records give pass@k and maj@k
(sampling n answers for all of them would cost n times the greedy pass, so a subset
bounds it). The rlvr trainer calls this at its evaluation marks and writes the row to
evals.jsonl; a peer trainer (benchmarks/headline/bench_learning_trl_side.py) calls the same
function on its own model, so both sides are graded by the same code and decoding.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from rlvr.data.records import TaskRecord
from rlvr.evaluation.progress import Progress
from rlvr.evaluation.runner import EvalResult, EvalSettings, evaluate_records
from rlvr.evaluation.summary import Attempt
from rlvr.rollout.base import RolloutEngine
from rlvr.verifiers.pool import BatchVerifier

Renderer = Callable[[TaskRecord], str]


@dataclass(frozen=True)
class EvalPlan:
    """What one held-out evaluation runs (see the module docstring)."""

    max_new_tokens: int
    stop: tuple[str, ...] = ()
    n: int = 0  # sampled answers per record for pass@k / maj@k (0: greedy only)
    ks: tuple[int, ...] = (1,)
    temperature: float = 1.0
    sample_size: int = 0  # records that get the n samples, the first ones (0: all)
    seed: int = 0  # the samples' seed: every evaluation of a run draws alike

    def validate(self) -> None:
        """Before the greedy pass runs, so a bad sampling setting costs nothing: the
        sampled pass's own settings check n, ks and temperature (EvalSettings)."""
        if self.sample_size < 0:
            raise ValueError("sample_size must be >= 0")
        _settings(self, greedy=not self.n, rows=1).validate()


@dataclass
class HeldOutResult:
    row: dict[str, float]  # the flat numbers (see held_out_eval), less eval_seconds
    greedy: list[Attempt]  # every greedy attempt, in record order
    seconds: float  # wall time of the evaluation


def _settings(plan: EvalPlan, greedy: bool, rows: int) -> EvalSettings:
    # one generate call per pass (the engine splits it into its own batches)
    return EvalSettings(greedy=greedy, n=0 if greedy else plan.n, ks=plan.ks,
                        temperature=plan.temperature, max_new_tokens=plan.max_new_tokens,
                        batch_size=max(1, rows), seed=plan.seed, stop=tuple(plan.stop))


def _mean_tokens(result: EvalResult, mode: str) -> float:
    tokens = [a.num_tokens for a in result.attempts if a.mode == mode]
    return sum(tokens) / len(tokens) if tokens else float("nan")


def run_held_out(engine: RolloutEngine, render: Renderer, pool: BatchVerifier | None,
                 records: Sequence[TaskRecord], plan: EvalPlan, verifier: str = "",
                 options: dict[str, Any] | None = None,
                 progress: Progress | None = None) -> HeldOutResult:
    """Greedy over `records`, then plan.n samples over the first plan.sample_size;
    `progress` shows each pass."""
    plan.validate()
    started = time.perf_counter()
    greedy = evaluate_records(engine, records, render, _settings(plan, True, len(records)),
                              pool, verifier, options, progress)
    row = {k: v for k, v in greedy.metrics.items() if k.startswith("greedy/")}
    row["greedy/length"] = _mean_tokens(greedy, "greedy")
    row["count"] = float(len(records))
    if plan.n:
        subset = list(records[:plan.sample_size] if plan.sample_size else records)
        sampled = evaluate_records(engine, subset, render, _settings(plan, False, len(subset)),
                                   pool, verifier, options, progress)
        row.update({k: v for k, v in sampled.metrics.items() if k != "count"})
        row["sample/length"] = _mean_tokens(sampled, "sample")
        row["sample/count"] = float(len(subset))
    return HeldOutResult(row, [a for a in greedy.attempts if a.mode == "greedy"],
                         time.perf_counter() - started)


def held_out_eval(engine: RolloutEngine, render: Renderer, pool: BatchVerifier | None,
                  records: Sequence[TaskRecord], plan: EvalPlan, verifier: str = "",
                  options: dict[str, Any] | None = None) -> dict[str, float]:
    """The flat row: greedy/accuracy, greedy/score, greedy/length (mean tokens),
    greedy/truncated, greedy/errors, count; with plan.n also sample/accuracy, pass@k,
    maj@k, sample/length, sample/count; and eval_seconds. `verifier`/`options` override
    every record's verifier, as the trainer's reward.verifier does."""
    result = run_held_out(engine, render, pool, records, plan, verifier, options)
    return {**result.row, "eval_seconds": result.seconds}
