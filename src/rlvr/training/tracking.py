"""The run's experiment trackers (logging.*; rlvr.runs.trackers): checked before
anything expensive, started on rank 0 once the run directory exists, fed by the loop.

Every other rank gets an empty TrackerSet, so the loop calls it unconditionally."""

from __future__ import annotations

from typing import Callable

from rlvr.config import ConfigError, config_to_dict
from rlvr.runs import RunDir
from rlvr.runs.trackers import (RunInfo, TrackerError, TrackerSet, build_tracker,
                                tracker_problem)
from rlvr.training.config import LoggingConfig, TrainConfig


def check_trackers(logging: LoggingConfig) -> None:
    """ConfigError naming logging.backends when a chosen tracker's package does not
    import here (cheap next to a model; train() calls it before building anything)."""
    for name in logging.backends:
        problem = tracker_problem(name, load=True)
        if problem:
            raise ConfigError(problem, "logging.backends")


def start_trackers(cfg: TrainConfig, run: RunDir, first_step: int, is_main: bool,
                   warn: Callable[[str], None]) -> TrackerSet:
    """The started trackers (none on ranks other than 0, none for jsonl alone);
    ConfigError naming logging.backends when one cannot start."""
    log = cfg.logging
    names = [n for n in dict.fromkeys(log.backends) if n != "jsonl"] if is_main else []
    trackers = TrackerSet([build_tracker(n) for n in names], log.attempts_per_step,
                          log.attempts_every, warn)
    info = RunInfo(name=run.path.name, run_dir=run.path, config=config_to_dict(cfg),
                   project=log.project, first_step=first_step,
                   options={"wandb_mode": log.wandb_mode, "wandb_entity": log.wandb_entity,
                            "mlflow_tracking_uri": log.mlflow_tracking_uri})
    try:
        return trackers.start(info)
    except TrackerError as exc:
        raise ConfigError(str(exc), "logging.backends") from exc


def finish_status(error: BaseException | None) -> str:
    """The trackers' end state: finished, killed (Ctrl-C, a signal) or failed."""
    if error is None:
        return "finished"
    return "killed" if isinstance(error, (KeyboardInterrupt, SystemExit)) else "failed"
