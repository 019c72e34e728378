"""Tracker backends by name, the package each needs, and the extra that installs it.
Nothing here imports a tracker library until a backend is checked or built."""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass

from rlvr.runs.trackers.base import Tracker


@dataclass(frozen=True)
class Backend:
    package: str  # what `import` needs
    extra: str  # pip install 'rlvr[EXTRA]'
    module: str  # rlvr.runs.trackers.MODULE holds the Tracker
    cls: str


BACKENDS: dict[str, Backend] = {
    "tensorboard": Backend("tensorboard", "tensorboard", "tensorboard_tracker",
                           "TensorBoardTracker"),
    "wandb": Backend("wandb", "wandb", "wandb_tracker", "WandbTracker"),
    "mlflow": Backend("mlflow", "mlflow", "mlflow_tracker", "MlflowTracker"),
    "trackio": Backend("trackio", "trackio", "trackio_tracker", "TrackioTracker"),
}
# jsonl: the run directory's own files, always written; naming it adds nothing.
TRACKER_NAMES = ("jsonl", *BACKENDS)


def tracker_problem(name: str, load: bool = False) -> str | None:
    """Why backend `name` cannot run here (None: it can). Without `load` only whether
    its package is installed (cheap: the config checks this when it loads); with it,
    whether the package imports (train() checks this before building a model)."""
    if name not in TRACKER_NAMES:
        return f"unknown tracker {name!r} (choices: {', '.join(TRACKER_NAMES)})"
    backend = BACKENDS.get(name)
    if backend is None:
        return None
    try:
        if load:
            importlib.import_module(backend.package)
        elif importlib.util.find_spec(backend.package) is None:
            raise ImportError(f"No module named {backend.package!r}")
    except Exception as exc:  # a broken install fails as a missing one would
        return (f"{name} needs the {backend.package} package: pip install "
                f"'rlvr[{backend.extra}]' ({type(exc).__name__}: {exc})")
    return None


def build_tracker(name: str) -> Tracker:
    """A fresh, unstarted tracker of backend `name` (not jsonl)."""
    backend = BACKENDS[name]
    module = importlib.import_module(f"rlvr.runs.trackers.{backend.module}")
    return getattr(module, backend.cls)()
