"""Held-out evaluation of multi-turn episodes (`episodes.max_turns > 1`).

A one-turn evaluation (rlvr.evaluation.held_out) grades one answer to each prompt; an
episode's worth is how it ends after the environment's replies. Here each held-out
record runs one greedy episode in the run's own environment through the same runner
the training steps use (rlvr.episodes.runner), graded as training grades it (the
environment's reward, or the verifier on the model's last turn when the environment
leaves it ungraded). Greedy, like the one-turn headline: every evaluation of a run
decodes alike, so two evaluations differ only by what the policy learned.

The row (evals.jsonl), beside the one-turn evaluation's greedy/accuracy, greedy/score,
greedy/length and count:

    greedy/accuracy            share of episodes solved (passed) by their end
    greedy/score               mean episode reward (the environment's, turn costs included)
    greedy/length              mean tokens the model wrote per episode (all its turns)
    greedy/turns               mean model turns per episode
    greedy/tool_calls          mean tool calls per episode (the environment's count)
    greedy/errors              share of episodes an environment fault ended
    greedy/solved_turn_k       k = 1..max_turns: share solved at model turn k
    greedy/solved_after_feedback  share solved at turn 2 or later, after the
                               environment's first reply (the hints were used)
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable, Sequence

from rlvr.data.records import TaskRecord, prompt_text
from rlvr.episodes.base import Environment
from rlvr.episodes.render import TurnRenderer
from rlvr.episodes.runner import Episode, run_episodes
from rlvr.rollout.base import RolloutEngine, SamplingParams
from rlvr.training.episode_metrics import end_kind
from rlvr.training.rewards import grade_episodes
from rlvr.verifiers.base import Verdict
from rlvr.verifiers.pool import BatchVerifier

FAULTS = ("env_timeout", "env_error", "bad_observation")


def evaluate_episodes(engine: RolloutEngine, turns: TurnRenderer,
                      make_env: Callable[[TaskRecord], Environment], pool: BatchVerifier,
                      records: Sequence[TaskRecord], max_turns: int, max_new_tokens: int,
                      stop: Sequence[str] = (), seed: int = 0, verifier: str = "",
                      options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The result dict `rlvr.training.evaluate.evaluate` returns ({"accuracy", "score",
    "n", "examples", "row", "seconds", "answers"}), from one greedy episode per record;
    {} without records."""
    if not records:
        return {}
    started = time.perf_counter()
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0,
                            stop=tuple(stop), seed=seed)
    episodes = run_episodes(engine, turns, make_env, list(records), 1, params)  # [P][1]
    verdicts, rewards = grade_episodes(pool, records, episodes, verifier, options)
    flat = [group[0] for group in episodes]
    passed = [group[0].passed for group in verdicts]
    row = episode_row(flat, passed, rewards[:, 0].tolist(), max_turns)
    answers = [answer(r, e, v[0]) for r, e, v in zip(records, flat, verdicts)]
    examples = [{"id": a["id"], "completion": a["completion"], "passed": a["passed"]}
                for a in answers[:5]]
    return {"accuracy": row["greedy/accuracy"], "score": row["greedy/score"],
            "n": len(records), "examples": examples, "row": row,
            "seconds": time.perf_counter() - started, "answers": answers}


def episode_row(episodes: Sequence[Episode], passed: Sequence[bool],
                rewards: Sequence[float], max_turns: int) -> dict[str, float]:
    """The flat numbers of the module docstring, one entry per episode in each list."""
    n = len(episodes)
    row = {
        "greedy/accuracy": sum(passed) / n,
        "greedy/score": sum(rewards) / n,
        "greedy/length": sum(e.model_tokens for e in episodes) / n,
        "greedy/turns": sum(e.turns for e in episodes) / n,
        "greedy/tool_calls": sum(e.info.get("tool_calls", 0) for e in episodes) / n,
        "greedy/errors": sum(end_kind(e.end_reason) in FAULTS for e in episodes) / n,
        "count": float(n),
    }
    for k in range(1, max_turns + 1):
        row[f"greedy/solved_turn_{k}"] = sum(
            1 for e, ok in zip(episodes, passed) if ok and e.turns == k) / n
    row["greedy/solved_after_feedback"] = sum(
        1 for e, ok in zip(episodes, passed) if ok and e.turns >= 2) / n
    return row


def answer(record: TaskRecord, episode: Episode, verdict: Verdict) -> dict[str, Any]:
    """One line of evals/step-NNNNNN.jsonl: the episode's last turn as the completion,
    its verdict, and the whole transcript (what a person reads to see how it was won)."""
    return {"id": record.id, "prompt": prompt_text(record), "reference": record.reference,
            "completion": episode.final_text, "passed": verdict.passed,
            "reason": verdict.reason, "tokens": episode.model_tokens, "turns": episode.turns,
            "end_reason": episode.end_reason,
            # JSON values only: an environment's message may carry extras of any type
            "messages": json.loads(json.dumps(episode.messages, default=repr))}
