"""Preference pairs for reward-model training: {"prompt", "chosen", "rejected"} rows
from JSONL/JSON/Parquet (rlvr.data.loading.read_rows), checked when read so a bad row
stops `rlvr rm-train` before any model loads, naming the file and line; and the
held-out split."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rlvr.data.loading import DataError, read_rows

FIELDS = ("prompt", "chosen", "rejected")


@dataclass(frozen=True)
class PreferencePair:
    """One comparison: for `prompt`, `chosen` is preferred to `rejected`."""

    prompt: str
    chosen: str
    rejected: str
    where: str = ""  # file:line, for messages


def load_pairs(path: str | Path, limit: int = 0) -> list[PreferencePair]:
    """Every pair of `path` (the first `limit` when > 0); DataError naming the file and
    line of the first bad row: not an object, a field missing, empty or not text, or
    chosen identical to rejected (a pair that prefers nothing)."""
    pairs = []
    for where, _, row in read_rows(path):
        if limit and len(pairs) >= limit:
            break
        pairs.append(_pair(row, where))
    if not pairs:
        raise DataError(f"{path}: no preference pairs")
    return pairs


def _pair(row: Any, where: str) -> PreferencePair:
    if not isinstance(row, dict):
        raise DataError(f"{where}: a preference pair must be an object with fields "
                        f"{', '.join(FIELDS)}, got {type(row).__name__}")
    for name in FIELDS:
        if name not in row:
            raise DataError(f"{where}: field {name!r} is missing (a pair needs "
                            f"{', '.join(FIELDS)})")
        value = row[name]
        if not isinstance(value, str):
            raise DataError(f"{where}: field {name!r} must be text, got "
                            f"{type(value).__name__}")
        if not value.strip():
            raise DataError(f"{where}: field {name!r} is empty")
    if row["chosen"] == row["rejected"]:
        raise DataError(f"{where}: 'chosen' and 'rejected' are identical")
    return PreferencePair(row["prompt"], row["chosen"], row["rejected"], where)


def split_held_out(pairs: list[PreferencePair], fraction: float,
                   seed: int) -> tuple[list[PreferencePair], list[PreferencePair]]:
    """(train, held out): whole prompts go to one side, so no held-out prompt was seen
    in training; about `fraction` of the pairs (at least one prompt) are held out."""
    prompts = sorted({p.prompt for p in pairs})
    if len(prompts) < 2:
        raise DataError("a held-out split needs pairs for at least two distinct prompts "
                        "(or give data.eval_path)")
    random.Random(seed).shuffle(prompts)
    held, count, target = set(), 0, fraction * len(pairs)
    per_prompt: dict[str, int] = {}
    for p in pairs:
        per_prompt[p.prompt] = per_prompt.get(p.prompt, 0) + 1
    for prompt in prompts[:-1]:  # the last prompt always stays in training
        if held and count >= target:
            break
        held.add(prompt)
        count += per_prompt[prompt]
    return ([p for p in pairs if p.prompt not in held],
            [p for p in pairs if p.prompt in held])
