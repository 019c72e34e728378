"""Which environment a run's episodes act in: `episodes.environment` (an operator's
config name, never a dataset row's) -> factory(record, options, limits) -> Environment.

This table holds the trainer's own `single_turn` (rlvr.episodes.single_turn); the
registry of built-in environments in rlvr.environments extends it with the rest.
`environment_factory` is the seam the loop gets (Trainer.make_env): a function of the
task record alone, the operator's options and limits bound in.
"""

from __future__ import annotations

from typing import Any, Callable

from rlvr.data.records import TaskRecord
from rlvr.episodes.base import EpisodeLimits, Environment
from rlvr.episodes.single_turn import single_turn

Factory = Callable[[TaskRecord, dict[str, Any], EpisodeLimits], Environment]

ENVIRONMENTS: dict[str, Factory] = {"single_turn": single_turn}


def environment_names() -> list[str]:
    return sorted(ENVIRONMENTS)


def check_environment(name: str, options: dict[str, Any]) -> None:
    """ValueError naming the problem when `name` is unknown or its factory's
    `check_options` (a factory may carry one; called when the config loads, before any
    model) refuses `options`."""
    if name not in ENVIRONMENTS:
        raise ValueError(f"unknown environment {name!r} (known: "
                         f"{', '.join(environment_names())})")
    check = getattr(ENVIRONMENTS[name], "check_options", None)
    if check is not None:
        check(dict(options))


def environment_factory(name: str, options: dict[str, Any], limits: EpisodeLimits
                        ) -> Callable[[TaskRecord], Environment]:
    """A fresh environment per episode: `ENVIRONMENTS[name](record, options, limits)`."""
    factory = ENVIRONMENTS[name]
    return lambda record: factory(record, dict(options), limits)
