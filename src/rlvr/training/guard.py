"""The run's guard: what rlvr.training.run asks after each step and each held-out
evaluation. It feeds the collapse watch (rlvr.training.collapse), prints its warnings,
adds `collapse/warning` (how many signals are on) to the step's metrics, says when
`watch.stop_on_collapse` ends the run, and keeps the best checkpoint
(`eval.keep_best`, rlvr.training.best). A resumed run's guard first replays the run's
kept metrics.jsonl and evals.jsonl, so its windows, its best accuracy and its warnings
continue where the checkpoint left them.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

from rlvr.config import ConfigError
from rlvr.distributed.context import Dist
from rlvr.runs import Progress, RunDir
from rlvr.training.best import BestKeeper, drop_best_after
from rlvr.training.collapse import CollapseWatch
from rlvr.training.config import TrainConfig


def check_guard(cfg: TrainConfig, held_out: Sequence[Any]) -> None:
    """eval.keep_best without held-out data would keep nothing: refused before any
    model loads (the run's held-out set is known once its data is read)."""
    if cfg.eval.keep_best and not held_out:
        raise ConfigError("needs held-out data (data.eval_path, or the arithmetic task's "
                          "test split) to know which step is best", "eval.keep_best")


class RunGuard:
    def __init__(self, cfg: TrainConfig, run: RunDir, progress: Progress, dist: Dist,
                 resumed_at: int | None = None) -> None:
        self.cfg, self.progress, self.dist = cfg, progress, dist
        self.watch = CollapseWatch(cfg.watch) if cfg.watch.enabled else None
        self.stopped: dict[str, Any] | None = None
        if resumed_at is not None and dist.is_main and cfg.eval.keep_best:
            dropped = drop_best_after(run.checkpoints, resumed_at)
            if dropped:
                progress.message(f"best checkpoint of step {dropped['step']} dropped: it is "
                                 f"past the step {resumed_at} this run resumes from")
        self.best = BestKeeper(run.checkpoints) if cfg.eval.keep_best and dist.is_main \
            else None
        if resumed_at is not None and self.watch is not None:
            self._replay(run)

    def _replay(self, run: RunDir) -> None:
        """The watch's state from the logs a resume kept (their warnings are not printed
        again; they stay in summary.json's list)."""
        evals = {int(row["step"]): row.get("greedy/accuracy") for row in run.read_evals()}
        if 0 in evals:
            self.watch.observe_eval(0, evals.pop(0))
        for line in run.read_metrics():
            self.watch.observe_step(line)
            if int(line["step"]) in evals:
                self.watch.observe_eval(int(line["step"]), evals.pop(int(line["step"])))

    def evaluated(self, step: int, result: dict[str, Any], trainer: Any) -> None:
        """After a held-out evaluation of the weights at `step` ({} on a rank that did
        not evaluate, or without held-out data)."""
        accuracy = result.get("accuracy") if result else None
        if accuracy is None or not math.isfinite(accuracy):
            return
        if self.best is not None:
            model = trainer.sampler if trainer.sampler is not None else trainer.model
            if self.best.offer(step, float(accuracy), model, trainer.tokenizer):
                self.progress.message(f"best held-out accuracy so far: {accuracy:.3f} at "
                                      f"step {step} (checkpoints/best)")
        if self.watch is not None:
            self._say(self.watch.observe_eval(step, float(accuracy)))

    def after_step(self, step: int, metrics: dict[str, Any], result: dict[str, Any],
                   trainer: Any) -> bool:
        """After step `step` (and its evaluation `result`, {} when none ran): feed the
        watch, add collapse/warning to `metrics`; whether the run should stop here."""
        self.evaluated(step, result, trainer)
        if self.watch is None:
            return False
        self._say(self.watch.observe_step(metrics))
        metrics["collapse/warning"] = float(len(self.watch.on))
        stop = self.cfg.watch.stop_on_collapse and self.watch.collapsed()
        if self.cfg.watch.stop_on_collapse and self.dist.active:
            stop = any(self.dist.gather(stop))  # rank 0 alone sees held-out accuracy
        if stop:
            self.stopped = self.watch.stop_reason(step)
            self.progress.message(f"collapse watch: {self.stopped['message']} "
                                  "(watch.stop_on_collapse)")
        return stop

    def _say(self, warnings: list[dict[str, Any]]) -> None:
        for warning in warnings:
            self.progress.message(warning["message"])

    def summary(self) -> dict[str, Any]:
        """summary.json's part: the warnings, why the run stopped early (None: it did
        not), and the best checkpoint when eval.keep_best is on."""
        part: dict[str, Any] = {
            "collapse_warnings": self.watch.warnings if self.watch is not None else [],
            "stopped": self.stopped}
        if self.cfg.eval.keep_best:
            part["best"] = self.best.summary() if self.best is not None else None
        return part
