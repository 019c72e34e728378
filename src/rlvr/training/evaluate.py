"""Held-out accuracy with greedy decoding (the before/after numbers of a run), computed
by rlvr.evaluation — the same code `rlvr eval` runs."""

from __future__ import annotations

from typing import Any, Sequence

from rlvr.data.prompts import PromptRenderer
from rlvr.data.records import TaskRecord
from rlvr.evaluation.runner import EvalSettings, evaluate_records
from rlvr.rollout.base import RolloutEngine
from rlvr.verifiers.pool import VerifierPool


def evaluate(engine: RolloutEngine, renderer: PromptRenderer, pool: VerifierPool,
             records: Sequence[TaskRecord], max_new_tokens: int, stop: Sequence[str] = (),
             verifier: str = "", options: dict[str, Any] | None = None) -> dict[str, Any]:
    """{"accuracy", "score", "n", "examples": first few (prompt id, completion, passed)}.
    A non-empty `verifier` grades every record with it and `options`, as the training
    rewards are (rlvr.training.rewards.verify_groups)."""
    if not records:
        return {}
    # one generate call for the whole held-out set, as the rollouts are batched
    settings = EvalSettings(greedy=True, max_new_tokens=max_new_tokens, stop=tuple(stop),
                            batch_size=len(records))
    result = evaluate_records(engine, records, renderer.render, settings, pool, verifier,
                              options)
    examples = [{"id": a.record_id, "completion": a.completion, "passed": a.verdict.passed}
                for a in result.attempts[:5]]
    return {"accuracy": result.metrics["greedy/accuracy"],
            "score": result.metrics["greedy/score"], "n": len(records), "examples": examples}
