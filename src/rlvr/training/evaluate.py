"""The trainer's held-out evaluations: greedy accuracy over the held-out set (the
before/after numbers of a run) and, when `eval.n` is set, pass@k / maj@k from sampled
answers, computed by rlvr.evaluation.held_out — the same code `rlvr eval` and the
learning benchmark's peer use — and when they are due (EvalSchedule)."""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Sequence

from rlvr.data.prompts import PromptRenderer
from rlvr.data.records import TaskRecord, prompt_text
from rlvr.episodes.render import TurnRenderer
from rlvr.evaluation.held_out import EvalPlan, run_held_out
from rlvr.evaluation.progress import Progress as EvalProgress
from rlvr.rollout.base import RolloutEngine
from rlvr.runs import Progress, RunDir
from rlvr.training.clock import TrainingClock
from rlvr.training.config import TrainConfig
from rlvr.training.episode_eval import evaluate_episodes
from rlvr.verifiers.pool import BatchVerifier


def eval_plan(cfg: TrainConfig) -> EvalPlan:
    """The run's evaluation: its generation budget and stop strings, its eval section."""
    e = cfg.eval
    return EvalPlan(max_new_tokens=cfg.sampling.max_new_tokens, stop=tuple(cfg.sampling.stop),
                    n=e.n, ks=tuple(e.ks), temperature=e.temperature,
                    sample_size=e.sample_size, seed=cfg.seed)


def eval_grader(cfg: TrainConfig) -> tuple[str, dict[str, Any]]:
    """The verifier and options held-out answers are graded with: eval.verifier when set
    (a strict checker beside a lenient or learned reward), else the reward's."""
    if cfg.eval.verifier:
        return cfg.eval.verifier, cfg.eval.options
    return cfg.reward.verifier, cfg.reward.options


def held_out_evaluator(cfg: TrainConfig, engine: RolloutEngine, renderer: PromptRenderer,
                       pool: BatchVerifier, records: Sequence[TaskRecord],
                       make_env: Callable[[TaskRecord], Any],
                       display: Progress | None = None) -> Callable[[], dict[str, Any]]:
    """The run's held-out evaluation as a call: one-turn answers (`evaluate`), or, when
    an episode has several turns, one greedy episode per record in the run's
    environment `make_env` (rlvr.training.episode_eval; eval.n's sampled pass is
    one-turn only, and not run for episodes)."""
    verifier, options = eval_grader(cfg)
    if cfg.episodes.max_turns == 1:
        plan = eval_plan(cfg)
        return lambda: evaluate(engine, renderer, pool, records, verifier=verifier,
                                options=options, plan=plan, display=display)
    turns = TurnRenderer(renderer)
    return lambda: evaluate_episodes(engine, turns, make_env, pool, records,
                                     cfg.episodes.max_turns, cfg.sampling.max_new_tokens,
                                     cfg.sampling.stop, cfg.seed, verifier, options)


def evaluate(engine: RolloutEngine, renderer: PromptRenderer, pool: BatchVerifier,
             records: Sequence[TaskRecord], max_new_tokens: int = 0, stop: Sequence[str] = (),
             verifier: str = "", options: dict[str, Any] | None = None,
             plan: EvalPlan | None = None, display: Progress | None = None) -> dict[str, Any]:
    """{"accuracy", "score", "n", "examples": first few (prompt id, completion, passed),
    "row": every number (rlvr.evaluation.held_out), "seconds", "answers": every greedy
    answer with its prompt, reference and verdict}; {} without records. `plan` (else
    greedy only, `max_new_tokens`, `stop`) says what runs. A non-empty `verifier` grades
    every record with it and `options`, as the training rewards are
    (rlvr.training.rewards.verify_groups). `display`, the run's progress, also shows
    this evaluation's (a bar on its terminal, a start and an end line in a log)."""
    if not records:
        return {}
    plan = plan or EvalPlan(max_new_tokens=max_new_tokens, stop=tuple(stop))
    result = run_held_out(engine, renderer.render, pool, records, plan, verifier, options,
                          progress=held_out_progress(display))
    examples = [{"id": a.record_id, "completion": a.completion, "passed": a.verdict.passed}
                for a in result.greedy[:5]]
    answers = [{"id": a.record_id, "prompt": prompt_text(r), "reference": r.reference,
                "completion": a.completion, "passed": a.verdict.passed,
                "reason": a.verdict.reason, "tokens": a.num_tokens}
               for r, a in zip(records, result.greedy)]
    return {"accuracy": result.row["greedy/accuracy"], "score": result.row["greedy/score"],
            "n": len(records), "examples": examples, "row": result.row,
            "seconds": result.seconds, "answers": answers}


def held_out_progress(display: Progress | None) -> EvalProgress:
    """The evaluation's display on the run's stream: a bar that clears when done (the
    run's message gives the result), or lines in a log; silent without a display."""
    if display is None or display.quiet:
        return EvalProgress.silent()
    return EvalProgress(label="held-out", stream=display.stream, tty=display.live,
                        leave=False)


class EvalSchedule:
    """When a held-out evaluation is due after an RL step: every `every` steps, and each
    time the training clock passes a multiple of `every_s` seconds (one evaluation even
    when a long step passes several marks). Marks already passed before a resume are
    not evaluated again."""

    def __init__(self, every: int, every_s: float, clock_seconds: float = 0.0) -> None:
        self.every, self.every_s = every, every_s
        self.marks_done = self._marks(clock_seconds)

    def _marks(self, seconds: float) -> int:
        return math.floor(seconds / self.every_s) if self.every_s > 0 else 0

    def due(self, step: int, clock_seconds: float) -> bool:
        by_steps = self.every > 0 and step % self.every == 0
        marks = self._marks(clock_seconds)
        by_time = marks > self.marks_done
        self.marks_done = max(self.marks_done, marks)
        return by_steps or by_time


class HeldOutLog:
    """Runs a held-out evaluation with the training clock paused, appends its row to the
    run's evals.jsonl ({"step", "train_seconds", "wall_seconds", **row, "eval_seconds"})
    and writes its greedy answers to evals/step-NNNNNN.jsonl (what a person or a strict
    re-check reads to see that held-out accuracy is made of real answers)."""

    def __init__(self, evaluate_now: Callable[[], dict[str, Any]], run: RunDir,
                 clock: TrainingClock, wall_origin: float) -> None:
        self.evaluate_now, self.run, self.clock = evaluate_now, run, clock
        self.wall_origin = wall_origin  # perf_counter at wall second 0 (moved on resume)
        # called with (step, row) after each line is appended (the experiment trackers)
        self.on_row: Callable[[int, dict[str, Any]], None] = lambda step, row: None

    def __call__(self, step: int) -> dict[str, Any]:
        with self.clock.paused():
            result = self.evaluate_now()
        if result:
            self.run.write_eval_answers(step, result.pop("answers"))
            row = {"step": step, "train_seconds": self.clock.seconds(),
                   "wall_seconds": time.perf_counter() - self.wall_origin,
                   **result["row"], "eval_seconds": result.pop("seconds")}
            self.run.append_evals(row)
            self.on_row(step, row)
        return result
