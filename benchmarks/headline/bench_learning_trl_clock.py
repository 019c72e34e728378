"""The TRL side's evaluations (bench_learning_trl_side.py): a TrainerCallback that keeps
rlvr's training clock over TRL's steps, evaluates the live TRL model when rlvr's trainer
would (step 0, the `eval.every` / `eval.every_s` marks, the end), stops training at
`max_seconds`, and writes the run-dir files rlvr's trainer writes: evals.jsonl,
evals/step-NNNNNN.jsonl (the greedy answers) and metrics.jsonl lines.

The clock, the schedule, the evaluation plan and the evaluation itself are the
trainer's own (rlvr.training.clock, rlvr.training.evaluate: `held_out_eval`'s numbers,
`HeldOutLog`'s files), so the two sides cannot drift apart.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

from rlvr.rollout.factory import EngineOptions, build_engine
from rlvr.runs import RunDir
from rlvr.training.clock import TrainingClock
from rlvr.training.evaluate import EvalSchedule, HeldOutLog, eval_plan, evaluate


class EvalClock(TrainerCallback):
    """Training clock: from the start of training, evaluations paused out (as rlvr's
    trainer). `time/step` is each TRL step's span (generation, rewards, update), from
    on_step_begin to on_step_end; `time/train_seconds` the clock at the step's end."""

    def __init__(self, cfg: Any, out: Path, tokenizer: Any, renderer: Any, pool: Any,
                 records: list, wall_origin: float) -> None:
        self.cfg, self.out, self.tokenizer, self.renderer = cfg, out, tokenizer, renderer
        self.pool, self.records = pool, records
        self.clock = TrainingClock()
        self.log_eval = HeldOutLog(self._evaluate_now, RunDir(out), self.clock, wall_origin)
        self.schedule = EvalSchedule(cfg.eval.every, cfg.eval.every_s)
        self.plan = eval_plan(cfg)
        self.step_began = 0.0
        self.step_seconds: list[float] = []
        self.step_clock = 0.0
        self.last_step = 0
        self.last_eval_step: int | None = None
        self.engine: Any = None
        self.model: Any = None

    def on_train_begin(self, args, state, control, model=None, **kwargs):  # noqa: ANN001
        s = self.cfg.sampling
        self.model = model
        # rlvr's own engine around TRL's live model: it decodes with the weights TRL's
        # optimizer updates in place (fast decode rebuilds its fused copies when a
        # parameter's version changes).
        self.engine = build_engine(s.engine, model, self.tokenizer, EngineOptions(
            s.max_batch_rows, s.fast_decode, s.activation_memory_gb))
        self.evaluate(0)  # before RL; the clock has not started
        self.clock.start()

    def on_step_begin(self, args, state, control, **kwargs):  # noqa: ANN001
        self.step_began = time.perf_counter()

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        self.step_seconds.append(time.perf_counter() - self.step_began)
        self.last_step, self.step_clock = state.global_step, self.clock.seconds()
        out_of_time = bool(self.cfg.max_seconds) and self.step_clock >= self.cfg.max_seconds
        if out_of_time:
            control.should_training_stop = True  # on_train_end evaluates
        # rlvr's trainer evaluates the last step once, after the loop: so does on_train_end
        final = out_of_time or state.global_step >= state.max_steps
        if not final and self.schedule.due(state.global_step, self.step_clock):
            self.evaluate(state.global_step)

    def on_log(self, args, state, control, logs=None, **kwargs):  # noqa: ANN001
        if not logs or "reward" not in logs:  # e.g. the end-of-training runtime summary
            return
        self.log_eval.run.append_metrics({
            "step": state.global_step, "reward/mean": logs["reward"],
            "response_length/mean": logs.get("completions/mean_length"),
            "time/step": self.step_seconds[-1] if self.step_seconds else None,
            "time/train_seconds": self.step_clock,
            **{f"trl/{key}": value for key, value in logs.items()}})

    def on_train_end(self, args, state, control, **kwargs):  # noqa: ANN001
        if self.last_eval_step != state.global_step:
            self.evaluate(state.global_step)

    def _evaluate_now(self) -> dict[str, Any]:
        result = evaluate(self.engine, self.renderer, self.pool, self.records,
                          verifier=self.cfg.reward.verifier, options=self.cfg.reward.options,
                          plan=self.plan)
        # The fast decode's fused weight copies would otherwise sit in TRL's memory
        # through the training steps (rlvr's trainer drops them the same way).
        self.engine.sync_weights(self.model)
        return result

    def evaluate(self, step: int) -> None:
        result = self.log_eval(step)  # clock paused; evals.jsonl and evals/ written
        self.last_eval_step = step
        print(f"trl eval step {step} at {self.clock.seconds():.0f} s: greedy accuracy "
              f"{result['accuracy']:.3f}", flush=True, file=sys.stderr)
