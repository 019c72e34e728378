"""The TRL side's evaluation schedule (bench_learning_trl_side.py): a TrainerCallback
that keeps a training clock, evaluates the live TRL model with rlvr's `held_out_eval`
at step 0, at every `eval.every_s` mark and at the end, stops training at `max_seconds`,
and writes evals.jsonl and metrics.jsonl lines in rlvr's run-dir formats."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from bench_learning import EvalSchedule


def eval_plan(cfg: Any) -> Any:
    """The held-out evaluation rlvr's trainer runs for `cfg` (its eval section)."""
    from rlvr.evaluation.held_out import EvalPlan

    e = cfg.eval
    return EvalPlan(n=e.n, ks=tuple(e.ks), temperature=e.temperature,
                    sample_size=e.sample_size, max_new_tokens=cfg.sampling.max_new_tokens,
                    stop=tuple(cfg.sampling.stop))


def _append(path: Path, row: dict[str, Any]) -> None:
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(row) + "\n")


class EvalClock(TrainerCallback):
    """Training clock = seconds since training began minus evaluation pauses (the same
    clock as rlvr's `train_seconds`). `time/step` is each step's own span (generation,
    rewards, update), from on_step_begin to on_step_end."""

    def __init__(self, cfg: Any, out: Path, tokenizer: Any, renderer: Any, pool: Any,
                 records: list, started: float) -> None:
        self.cfg, self.out, self.tokenizer, self.renderer = cfg, out, tokenizer, renderer
        self.pool, self.records, self.started = pool, records, started
        self.schedule = EvalSchedule(cfg.eval.every_s, cfg.max_seconds)
        self.plan = eval_plan(cfg)
        self.verifier = cfg.reward.verifier
        self.options = dict(cfg.reward.options) if cfg.reward.verifier else None
        self.began: float | None = None
        self.paused = 0.0
        self.step_began = 0.0
        self.step_seconds: list[float] = []
        self.last_step = 0
        self.last_eval_step: int | None = None
        self.engine: Any = None
        self.model: Any = None

    def train_seconds(self) -> float:
        if self.began is None:
            return 0.0
        return time.perf_counter() - self.began - self.paused

    def on_train_begin(self, args, state, control, model=None, **kwargs):  # noqa: ANN001
        from rlvr.rollout.factory import EngineOptions, build_engine

        s = self.cfg.sampling
        self.model = model
        # rlvr's own engine around TRL's live model: the weights it decodes with are
        # the ones TRL's optimizer updates in place (fast decode rebuilds its fused
        # copies when a parameter's version changes).
        self.engine = build_engine(s.engine, model, self.tokenizer, EngineOptions(
            s.max_batch_rows, s.fast_decode, s.activation_memory_gb))
        self.evaluate(0)  # before RL, before the clock starts
        self.began = time.perf_counter()

    def on_step_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        self.step_began = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self.step_seconds.append(time.perf_counter() - self.step_began)
        self.last_step = state.global_step
        now = self.train_seconds()
        if self.schedule.over_budget(now):
            control.should_training_stop = True  # on_train_end evaluates
        elif self.schedule.mark_due(now):
            self.evaluate(state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
        if not logs or "reward" not in logs:  # e.g. the end-of-training runtime summary
            return
        _append(self.out / "metrics.jsonl", {
            "step": state.global_step, "reward/mean": logs["reward"],
            "response_length/mean": logs.get("completions/mean_length"),
            "time/step": self.step_seconds[-1] if self.step_seconds else None,
            **{f"trl/{key}": value for key, value in logs.items()}})

    def on_train_end(self, args, state, control, **kwargs):  # noqa: ANN001
        if self.last_eval_step != state.global_step:
            self.evaluate(state.global_step)

    def evaluate(self, step: int) -> None:
        from rlvr.evaluation.held_out import held_out_eval

        train_seconds, began = self.train_seconds(), time.perf_counter()
        row = held_out_eval(self.engine, self.renderer.render, self.pool, self.records,
                            self.plan, verifier=self.verifier, options=self.options)
        # The fast decode's fused weight copies would otherwise sit in TRL's memory
        # through every training step (rlvr's trainer drops them the same way).
        self.engine.sync_weights(self.model)
        if self.began is not None:  # step 0's evaluation precedes the clock
            self.paused += time.perf_counter() - began
        line = {**row, "step": step, "train_seconds": train_seconds,
                "wall_seconds": time.perf_counter() - self.started}
        _append(self.out / "evals.jsonl", line)
        self.last_eval_step = step
        print(f"trl eval step {step} at {train_seconds:.0f} s: greedy accuracy "
              f"{row['greedy/accuracy']:.3f}", flush=True, file=sys.stderr)
