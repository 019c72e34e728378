"""A step's episodes summarised: the `episode/*` metrics and each attempt's episode block
in rollouts.jsonl.

    episode/turns_mean, episode/tool_calls_mean, episode/tool_errors_mean
    episode/env_seconds            seconds spent in environment calls, summed over the
                                   step's episodes (the calls overlap: it may exceed
                                   the step's wall time)
    episode/success_by_turn_k      k = 1..max_turns: share of the step's episodes whose
                                   reward is > 0 and that ended at turn k
    episode/end_<kind>             share of episodes that ended for each reason kind
                                   (done, max_turns, max_tokens, env_timeout, env_error,
                                   bad_observation); every kind on every line
"""

from __future__ import annotations

import json
from typing import Any, Sequence

END_KINDS = ("done", "max_turns", "max_tokens", "env_timeout", "env_error", "bad_observation")


def end_kind(reason: str) -> str:
    """"env_error: ValueError: ..." -> "env_error"."""
    return reason.split(":", 1)[0]


def episode_metrics(episodes: Sequence[Sequence[Any]], rewards: Sequence[Sequence[float]],
                    max_turns: int) -> dict[str, float]:
    """episodes [P][G] (rlvr.episodes.Episode); rewards [P][G] each episode's graded
    reward (the environment's or the verifier's score, before shaping)."""
    flat = [e for group in episodes for e in group]
    graded = [r for group in rewards for r in group]
    if not flat:
        return {}
    n = len(flat)
    metrics = {
        "episode/turns_mean": sum(e.turns for e in flat) / n,
        "episode/tool_calls_mean": sum(e.info.get("tool_calls", 0) for e in flat) / n,
        "episode/tool_errors_mean": sum(e.info.get("tool_errors", 0) for e in flat) / n,
        "episode/env_seconds": float(sum(e.info.get("env_seconds", 0.0) for e in flat)),
    }
    for k in range(1, max_turns + 1):
        won = sum(1 for e, r in zip(flat, graded) if r > 0 and e.turns == k)
        metrics[f"episode/success_by_turn_{k}"] = won / n
    kinds = [end_kind(e.end_reason) for e in flat]
    for kind in END_KINDS:
        metrics[f"episode/end_{kind}"] = kinds.count(kind) / n
    return metrics


def episode_record(episode: Any) -> dict[str, Any]:
    """The episode block of an attempt's rollouts.jsonl line: how it went, and its
    transcript when the environment wrote between the model's turns."""
    record: dict[str, Any] = {
        "turns": episode.turns, "end_reason": episode.end_reason,
        "model_tokens": episode.model_tokens, "env_tokens": episode.env_tokens,
        "reward_source": "verifier" if episode.reward is None else "environment",
        "tool_calls": episode.info.get("tool_calls", 0),
        "tool_errors": episode.info.get("tool_errors", 0),
    }  # no timings: a run's rollout lines are the same every time it is run
    if episode.turns > 1 or episode.env_tokens:
        record["messages"] = _plain(episode.messages)
        record["turn_rewards"] = episode.info.get("turn_rewards", [])
    return record


def _plain(value: Any) -> Any:
    """JSON values only: an environment's message may carry extras of any type."""
    return json.loads(json.dumps(value, default=repr))
