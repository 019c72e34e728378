"""verl adapter: rlvr verifiers as verl's custom reward function.

verl's reward managers call, per response (NaiveRewardManager and kin),

    compute_score(data_source=..., solution_str=..., ground_truth=..., extra_info=...,
                  **custom_reward_function.reward_kwargs)

with ground_truth = row["reward_model"]["ground_truth"], and take a float or a dict
holding "score" (its other keys are logged as reward_extra_info, so every item must
return the same keys). BatchRewardManager instead calls once per batch with
`data_sources`, `solution_strs`, `ground_truths`, `extra_infos` and takes a list.
Point verl at this module:

    custom_reward_function.path=<site-packages>/rlvr/adapters/verl.py
    custom_reward_function.name=compute_score           # or compute_score_batch
    +custom_reward_function.reward_kwargs.verifier=math  # optional

Which verifier grades an item, first match wins: the `verifier` keyword (reward_kwargs),
extra_info["verifier"], data_source itself when it is a verifier name, else
DATA_SOURCE_VERIFIERS[data_source]. data_source and extra_info come from the dataset:
they name a built-in or a plugin you listed (reward_kwargs `plugins`:
["my_pkg.rewards:MyVerifier"], then known by that string), never other code; an
import path among them that you did not list raises ValueError naming the field.

Returns {"score": float, "passed" and "acc": 0.0 or 1.0, "pred": the extracted answer
or ""} (acc and pred are what verl's validation metrics read); with
`log_components=True` a composite's per-component scores are added as
"<component>_score". Invalid references raise ValueError (a data bug, not a 0);
timeouts and verifier errors score 0.

verl's reward loop (its default) runs items concurrently and awaits a coroutine
function: name `compute_score_async` there. No call takes a global lock: concurrent
items spread over the adapters' shared workers (rlvr.adapters.common.SharedPool: this
rank's share of the cores, or `rlvr serve` servers with $RLVR_SERVE_URLS).
"""

from __future__ import annotations

from typing import Any, Sequence

from rlvr.adapters.common import (SHARED, check_options, data_verifier, normalise_reference,
                                  use_plugins)
from rlvr.verifiers.base import Verdict
from rlvr.verifiers.pool import Case
from rlvr.verifiers.registry import available, is_import_path

# data_source values of common verl datasets -> rlvr verifier.
DATA_SOURCE_VERIFIERS: dict[str, str] = {
    "openai/gsm8k": "math",
    "DigitalLearningGmbH/MATH-lighteval": "math",
    "HuggingFaceH4/MATH-500": "math",
    "lighteval/MATH": "math",
    "google/IFEval": "ifeval",
}

def _pick_verifier(data_source: Any, extra_info: Any, verifier: str | None) -> str:
    if verifier:  # reward_kwargs: the operator's
        return verifier
    if isinstance(extra_info, dict) and extra_info.get("verifier"):
        return data_verifier(extra_info["verifier"], "rlvr compute_score",
                             "extra_info['verifier']")
    if isinstance(data_source, str):
        if data_source in available() or is_import_path(data_source):
            return data_verifier(data_source, "rlvr compute_score", "data_source")
        if data_source in DATA_SOURCE_VERIFIERS:
            return DATA_SOURCE_VERIFIERS[data_source]
    raise ValueError(f"rlvr compute_score: no verifier for data_source {data_source!r}; pass "
                     "reward_kwargs.verifier, set extra_info['verifier'], or use a data_source "
                     f"among {sorted(set(available()) | set(DATA_SOURCE_VERIFIERS))}")


def _result(verdict: Verdict, where: str, log_components: bool) -> dict[str, Any]:
    if verdict.is_invalid:
        raise ValueError(f"rlvr compute_score: {where}: invalid ground_truth: "
                         f"{verdict.details.get('error')}")
    # acc and pred are what verl's validation metrics read; every item has every key
    result: dict[str, Any] = {"score": float(verdict.score), "passed": float(verdict.passed),
                              "acc": float(verdict.passed),
                              "pred": str(verdict.details.get("answer") or "")}
    if log_components:
        for name, component in verdict.details.get("components", {}).items():
            result[f"{name}_score"] = float(component["score"])
    return result


def _case(data_source: Any, solution_str: str, ground_truth: Any, extra_info: Any,
          verifier: str | None, timeout_s: float | None, options: dict[str, Any],
          plugins: Sequence[str] | None = None) -> Case:
    use_plugins(plugins, "plugins")  # reward_kwargs: the operator's, before any name
    name = _pick_verifier(data_source, extra_info, verifier)
    check_options(name, options)
    # verl passes the row's extra_info; a "prompt" (or "question") there is the task text
    prompt = None
    if isinstance(extra_info, dict):
        prompt = next((extra_info[k] for k in ("prompt", "question")
                       if isinstance(extra_info.get(k), str)), None)
    return Case(name, solution_str, normalise_reference(name, ground_truth), options, timeout_s,
                prompt=prompt)


def _run(cases: list[Case]) -> list[Verdict]:
    return SHARED.verify(cases)  # no lock: concurrent calls grade in parallel


def compute_score(data_source: Any, solution_str: str, ground_truth: Any,
                  extra_info: dict[str, Any] | None = None, *, verifier: str | None = None,
                  timeout_s: float | None = None, log_components: bool = False,
                  options: dict[str, Any] | None = None, plugins: Sequence[str] | None = None,
                  **_ignored: Any) -> dict[str, Any]:
    """Score one response (verl's per-item contract; see the module docstring). Safe
    to call from many threads at once: calls grade in parallel."""
    case = _case(data_source, solution_str, ground_truth, extra_info, verifier, timeout_s,
                 dict(options or {}), plugins)
    return _result(_run([case])[0], f"data_source {data_source!r}", log_components)


def compute_score_batch(data_sources: Sequence[Any], solution_strs: Sequence[str],
                        ground_truths: Sequence[Any], extra_infos: Sequence[Any] | None = None,
                        *, verifier: str | None = None, timeout_s: float | None = None,
                        log_components: bool = False, options: dict[str, Any] | None = None,
                        plugins: Sequence[str] | None = None,
                        **_ignored: Any) -> list[dict[str, Any]]:
    """Score a batch in parallel (verl's BatchRewardManager contract)."""
    extras = list(extra_infos) if extra_infos is not None else [None] * len(solution_strs)
    if data_sources is None:  # verl's offline evaluation passes None
        data_sources = [None] * len(solution_strs)
    cases = [_case(d, s, g, e, verifier, timeout_s, dict(options or {}), plugins)
             for d, s, g, e in zip(data_sources, solution_strs, ground_truths, extras)]
    return [_result(v, f"item {i}", log_components) for i, v in enumerate(_run(cases))]


async def compute_score_async(data_source: Any, solution_str: str, ground_truth: Any,
                              extra_info: dict[str, Any] | None = None, **kwargs: Any
                              ) -> dict[str, Any]:
    """`compute_score` as a coroutine, for verl's reward loop (which awaits a coroutine
    function's result and runs many items at once): the grading runs in a thread, so
    the event loop stays free, and concurrent items spread over the shared workers."""
    import asyncio

    return await asyncio.to_thread(compute_score, data_source, solution_str, ground_truth,
                                   extra_info, **kwargs)
