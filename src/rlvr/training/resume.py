"""What `rlvr train --resume RUN key=value` may change.

A resumed run continues from its own config.yaml. An override is allowed only when it
cannot change what is trained (the weights, the data order, the samples): a longer
`steps` extends a finished run exactly as if it had been planned that long, and the
cadence of checkpoints, logs and evaluation may change. Every other field (model, data,
algorithm, seed, lr, sampling, ...) is refused by name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from rlvr.config import ConfigError, config_to_dict, load_config, read_config_data
from rlvr.training.config import TrainConfig

# field -> why changing it leaves the trained weights alone
RESUMABLE_FIELDS: dict[str, str] = {
    "steps": "more (or fewer, not below the checkpoint) RL steps: every step's samples "
             "and data come from (seed, step), not from the planned length",
    "checkpoint_every": "when checkpoints are written",
    "keep_checkpoints": "how many checkpoints stay on disk",
    "max_seconds": "when RL stops, like steps: no step's samples depend on it",
    **{f"eval.{name}": "held-out evaluations change no weights and draw from their own "
                       "seeds" for name in ("every", "every_s", "n", "ks", "temperature",
                                            "sample_size")},
    "eval_every": "the older name of eval.every",
    "eval.keep_best": "the best checkpoint is a copy of weights the run already has",
    **{f"watch.{name}": "the collapse watch reads the run's records; stopping early is "
                        "like a shorter `steps`"
       for name in ("enabled", "window", "early_steps", "entropy_ratio", "entropy_floor",
                    "uniform_share", "accuracy_drop", "stop_on_collapse", "stop_signals")},
    "log_rollouts": "what is written to rollouts.jsonl",
    "log_every": "how often progress is printed",
    "audit_every": "the live reward-hack audit only warns",
    "reward.workers": "verifier processes grade the same cases the same way",
    "reward.backend": "Ray actors and rlvr serve servers give the worker processes' "
                      "verdicts (a run may move "
                      "its verifiers onto a cluster and back)",
    "reward.ray_address": "which Ray cluster grades, not how",
    **{f"logging.{name}": "experiment trackers only read the run's records"
       for name in ("backends", "project", "attempts_per_step", "attempts_every",
                    "wandb_mode", "wandb_entity", "mlflow_tracking_uri")},
    "reward.remote_urls": "which rlvr serve servers grade, not how",
    "reward.remote_token": "the servers' token, not how they grade",
    "episodes.options.url": "where the `openenv` environment's server is, not what it plays",
    "rollout.producer_timeout_s": "how long the update waits for the producer, not what it "
                                  "samples",
    "rollout.producer_threads": "the producer's CPU threads, not what it samples",
    "rollout.producers": "how many processes sample the steps' draws, not what they sample",
}


def resume_config(run_dir: str | Path, overrides: Sequence[str] = ()) -> TrainConfig:
    """The config of the run in `run_dir` with `overrides` applied; ConfigError naming
    each override that would change what was trained."""
    config_path = Path(run_dir) / "config.yaml"
    if not config_path.is_file():
        raise ConfigError(f"{run_dir}: not a run directory (no config.yaml)")
    read_config_data(None, overrides)  # malformed "key=value" text fails here, named
    keys = [override.partition("=")[0].strip() for override in overrides]
    refused = [key for key in keys if key not in RESUMABLE_FIELDS]
    if refused:
        raise ConfigError(_refusal(refused), refused[0])
    cfg = load_config(TrainConfig, config_path, overrides)
    check_resumable(load_config(TrainConfig, config_path), cfg)
    return cfg


def check_resumable(saved: TrainConfig, cfg: TrainConfig) -> None:
    """ConfigError unless `cfg` differs from the run's `saved` config only in
    RESUMABLE_FIELDS (train() checks this for every resume, from the CLI or not)."""
    old, new = _flat(config_to_dict(saved)), _flat(config_to_dict(cfg))
    changed = [name for name in new if old.get(name) != new[name]]
    refused = [name for name in changed if name not in RESUMABLE_FIELDS]
    if refused:
        raise ConfigError(_refusal(refused), refused[0])
    if cfg.steps != saved.steps and saved.optim.schedule != "constant":
        # The schedule's decay is fitted to the planned length (and saved with the
        # scheduler): a new length would not continue the run it extends.
        raise ConfigError(f"optim.schedule={saved.optim.schedule} decays over the planned "
                          f"{saved.steps} steps; a run with this schedule cannot change its "
                          "length", "steps")


def _refusal(names: list[str]) -> str:
    return (f"a resumed run may change only {', '.join(RESUMABLE_FIELDS)}; "
            f"{', '.join(names)} would change what was trained (start a new run instead)")


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    """Dotted field -> value of a config's plain data (a dict-valued field such as
    reward.options contributes its own dotted keys)."""
    if not isinstance(data, dict) or not data:
        return {prefix: data}
    flat: dict[str, Any] = {}
    for key, value in data.items():
        flat.update(_flat(value, f"{prefix}.{key}" if prefix else key))
    return flat
