"""Verifiers for the Ray pool's tests, loaded by name ("ray_helpers:Class") inside Ray
actors (the pool gives them the driver's import path)."""

from __future__ import annotations

import os


class DiesOnLoad:
    """A verifier whose process exits while it is being built: an actor that preloads it
    dies before it is ready, every time (as when rlvr cannot be imported on a node)."""

    name = "dies_on_load"

    def __init__(self) -> None:
        os._exit(3)
