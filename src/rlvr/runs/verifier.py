"""Which verifier graded a run: one answer for the trainer's live audit, `rlvr audit`
and `rlvr view`.

Attempts are graded by `reward.verifier` when it is set (a composite counts as the one
name it has there), else by `data.default_verifier`: the verifier of file rows that
name none and of the arithmetic task. `eval.verifier` grades the held-out evaluation
only, never the logged attempts, so it is not the answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from rlvr.errors import UserError


class RunConfigError(UserError, ValueError):
    """A run's config.yaml cannot be read as YAML; the message names it."""


def run_verifier(run: Any) -> str:
    """The name of the verifier that graded `run`'s attempts, "" when unknown.

    `run`: a run directory (its config.yaml is read; none -> ""), the config as loaded
    from YAML (a mapping), or the typed training config (attributes `reward`, `data`).
    RunConfigError when config.yaml is not YAML."""
    if isinstance(run, (str, Path)):
        run = _load_config(Path(run) / "config.yaml")
    reward, data = _part(run, "reward"), _part(run, "data")
    return str(_part(reward, "verifier") or _part(data, "default_verifier") or "")


def _part(node: Any, name: str) -> Any:
    """node[name] for a mapping, node.name for a dataclass; None when absent."""
    if isinstance(node, Mapping):
        return node.get(name)
    return getattr(node, name, None) if node is not None else None


def _load_config(path: Path) -> Any:
    if not path.is_file():
        return {}
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as exc:
        raise RunConfigError(f"{path}: malformed YAML: {exc}") from None
