"""The trainer config's run-side sections: held-out evaluations (`eval`), the collapse
watch (`watch`), experiment trackers (`logging`) and several processes (`distributed`).
Part of TrainConfig (rlvr.training.config), split out to keep that file readable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from rlvr.config import ConfigError
from rlvr.training.config_fields import _doc


@dataclass
class EvalConfig:
    """Held-out evaluations during RL, beside the before/after ones (evals.jsonl)."""

    every: int = _doc("evaluate every N RL steps (0 = not by steps)", default=0)
    every_s: float = _doc("evaluate each time the training clock (wall time less the "
                          "evaluations) passes a multiple of S seconds, so runs of "
                          "different speeds compare at the same marks (0 = not by time)",
                          default=0.0)
    n: int = _doc("sampled answers per problem for pass@k and maj@k (0 = greedy only)",
                  default=0)
    ks: tuple[int, ...] = _doc("the k of pass@k and maj@k (values above n are skipped)",
                               default=(1,))
    temperature: float = _doc("sampling temperature of the n answers", default=1.0)
    sample_size: int = _doc("held-out problems that get the n samples, the first ones "
                            "(0 = all of data.eval_size); greedy covers them all", default=0)
    verifier: str = _doc("grade held-out answers with this verifier instead of the "
                         "reward's (\"\" = reward.verifier): a strict checker watching a "
                         "run trained on a lenient or learned reward", default="")
    options: dict[str, Any] = _doc("options for eval.verifier", default_factory=dict)
    keep_best: bool = _doc("keep the weights of the evaluation with the highest held-out "
                           "(greedy) accuracy in checkpoints/best beside the latest "
                           "checkpoint; summary.json names its step and accuracy, `rlvr "
                           "eval RUN --best` evaluates it, a resume never starts from it",
                           default=False)

    def validate(self) -> None:
        for name in ("every", "every_s", "n", "sample_size"):
            if getattr(self, name) < 0:
                raise ConfigError("must be >= 0", name)
        if self.options and not self.verifier:
            raise ConfigError("needs eval.verifier (the reward's options grade otherwise)",
                              "options")
        from rlvr.verifiers.registry import check_options, is_import_path, spec_for

        # A plugin is checked against reward.plugins by TrainConfig, once every section
        # (reward's plugins among them) is read.
        if self.verifier and not is_import_path(self.verifier):
            try:
                spec_for(self.verifier)
                check_options(self.verifier, self.options)
            except (KeyError, ValueError) as exc:
                raise ConfigError(str(exc).strip('"'), "verifier") from None
        if any(k < 1 for k in self.ks):
            raise ConfigError(f"every k must be >= 1, got {list(self.ks)}", "ks")
        if self.n and self.temperature <= 0:
            raise ConfigError("sampling n answers needs temperature > 0", "temperature")


@dataclass
class WatchConfig:
    """The collapse watch (rlvr.training.collapse): three signals read from each step's
    metrics and the held-out evaluations; a warning when one starts, and optionally the
    run's end. A threshold of 0 turns its signal off."""

    enabled: bool = _doc("watch the run for collapse: warn (log line, collapse/warning "
                         "metric, summary.json warnings) when a signal starts", default=True)
    window: int = _doc("steps averaged for the entropy and uniform-group signals",
                       default=5)
    early_steps: int = _doc("the first N trained steps whose mean entropy is the "
                            "reference for entropy_ratio", default=5)
    entropy_ratio: float = _doc("entropy signal: the window's mean entropy below this "
                                "fraction of the early mean (0 = off)", default=0.25)
    entropy_floor: float = _doc("entropy signal: the window's mean entropy below this many "
                                "nats per token, whatever the early value (0 = off)",
                                default=0.0)
    uniform_share: float = _doc("uniform-group signal: the window's mean share of groups "
                                "whose rewards are all equal (no learning signal) at or "
                                "above this (0 = off)", default=0.9)
    accuracy_drop: float = _doc("held-out signal: the latest held-out accuracy at least "
                                "this far (absolute) below the best so far (0 = off)",
                                default=0.1)
    stop_on_collapse: bool = _doc("end the run (final evaluation, checkpoint, summary.json "
                                  "`stopped`) when stop_signals signals are on at once",
                                  default=False)
    stop_signals: int = _doc("how many of the three signals at once count as a collapse "
                             "for stop_on_collapse", default=2)

    def validate(self) -> None:
        for name in ("window", "early_steps"):
            if getattr(self, name) < 1:
                raise ConfigError("must be >= 1", name)
        for name in ("entropy_ratio", "uniform_share", "accuracy_drop"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise ConfigError(f"must be in [0, 1] (0 = off), got {getattr(self, name)}",
                                  name)
        if self.entropy_floor < 0:
            raise ConfigError("must be >= 0 (0 = off)", "entropy_floor")
        if not 1 <= self.stop_signals <= 3:
            raise ConfigError(f"must be 1, 2 or 3, got {self.stop_signals}", "stop_signals")


@dataclass
class LoggingConfig:
    """Experiment trackers fed from the run's records (rlvr.runs.trackers); the run
    directory's own files are always written."""

    backends: tuple[str, ...] = _doc(
        "trackers: jsonl (the run directory's files, always on) | tensorboard | wandb | "
        "mlflow | trackio; each but jsonl is an extra, e.g. pip install 'rlvr[wandb]'",
        default=("jsonl",))
    project: str = _doc("W&B and trackio project, MLflow experiment", default="rlvr")
    attempts_per_step: int = _doc("sampled attempts per step logged as a table (prompt, "
                                  "completion, verdict reason, score, reward, advantage, "
                                  "length), evenly spaced over the step's attempts; needs "
                                  "log_rollouts (0 = none)", default=8)
    attempts_every: int = _doc("log the attempts table every N steps", default=1)
    wandb_mode: Literal["", "offline", "online", "disabled"] = _doc(
        "W&B mode (\"\" = WANDB_MODE, else offline)", default="")
    wandb_entity: str = _doc("W&B entity (\"\" = your default)", default="")
    mlflow_tracking_uri: str = _doc("MLflow tracking URI (\"\" = MLFLOW_TRACKING_URI, else "
                                    "sqlite:///RUN_DIR/mlflow.db inside the run)", default="")

    def validate(self) -> None:
        from rlvr.runs.trackers import tracker_problem  # names only: imports no tracker

        for name in self.backends:
            problem = tracker_problem(name)
            if problem:
                raise ConfigError(problem, "backends")
        if self.attempts_per_step < 0:
            raise ConfigError("must be >= 0 (0 = no tables)", "attempts_per_step")
        if self.attempts_every < 1:
            raise ConfigError("must be >= 1", "attempts_every")


@dataclass
class DistributedConfig:
    """Several processes (torchrun; rlvr.distributed): FSDP2 over the ranks."""

    timeout_s: float = _doc("seconds a collective may wait for the other ranks before the "
                            "run fails (a rank that died); also the start-up wait",
                            default=300.0)

    def validate(self) -> None:
        if self.timeout_s <= 0:
            raise ConfigError("must be > 0", "timeout_s")
