"""Held-out accuracy with greedy decoding (the before/after numbers of a run)."""

from __future__ import annotations

from typing import Any, Sequence

from rlvr.data.prompts import PromptRenderer
from rlvr.data.records import TaskRecord
from rlvr.rollout.base import RolloutEngine, SamplingParams
from rlvr.training.rewards import verdict_metrics, verify_groups
from rlvr.verifiers.pool import VerifierPool


def evaluate(engine: RolloutEngine, renderer: PromptRenderer, pool: VerifierPool,
             records: Sequence[TaskRecord], max_new_tokens: int, stop: Sequence[str] = (),
             verifier: str = "") -> dict[str, Any]:
    """{"accuracy", "score", "n", "examples": first few (prompt id, completion, passed)}."""
    if not records:
        return {}
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0, stop=tuple(stop))
    groups = engine.generate([renderer.render(r) for r in records], 1, params)
    verdicts = verify_groups(pool, records, groups, verifier)
    metrics = verdict_metrics(verdicts)
    examples = [{"id": r.id, "completion": g[0].text, "passed": v[0].passed}
                for r, g, v in list(zip(records, groups, verdicts))[:5]]
    return {"accuracy": metrics["accuracy"], "score": metrics["score/mean"],
            "n": len(records), "examples": examples}
