"""The best checkpoint (`eval.keep_best`): the weights of the held-out evaluation with
the highest accuracy so far, kept beside the latest checkpoints.

    checkpoints/best/
        config.json, model.safetensors, tokenizer files   (from_pretrained loads them;
                                                           a LoRA run: the adapter)
        best.json      {"step": 20, "accuracy": 0.39}

It holds weights only (no optimizer, no RNG state): it is for evaluating and shipping,
never for resuming. Its name does not start with `step-`, so the resume point
(rlvr.training.checkpoint.latest_checkpoint), the rotation of `keep_checkpoints` and
`rlvr eval RUN` without --best all pass it by. A new best is written into a hidden
temp dir and renamed into place, so a kill mid-write leaves the previous best whole
(or, in the instant between two renames, `.old-best` holding it).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

BEST = "best"
RECORD = "best.json"


def best_dir(checkpoints: Path) -> Path:
    return checkpoints / BEST


def read_best(checkpoints: Path) -> dict[str, Any] | None:
    """best.json of the kept best ({"step", "accuracy"}), or None when there is none."""
    record = best_dir(checkpoints) / RECORD
    if not record.is_file():
        return None
    return json.loads(record.read_text(encoding="utf-8"))


def save_best(checkpoints: Path, step: int, accuracy: float, model: Any,
              tokenizer: Any) -> Path:
    """Write `model` and `tokenizer` as the best (step, accuracy), replacing the old one."""
    final, staging, old = (best_dir(checkpoints), checkpoints / f".tmp-{BEST}",
                           checkpoints / f".old-{BEST}")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    (staging / RECORD).write_text(json.dumps({"step": step, "accuracy": accuracy}),
                                  encoding="utf-8")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        final.rename(old)
    staging.rename(final)
    shutil.rmtree(old, ignore_errors=True)
    return final


def drop_best_after(checkpoints: Path, step: int) -> dict[str, Any] | None:
    """On resume from checkpoint `step`: a best from a later step belongs to the steps
    whose logs the resume drops, so it goes too; returns what was dropped (or None)."""
    record = read_best(checkpoints)
    if record is None or record["step"] <= step:
        return None
    shutil.rmtree(best_dir(checkpoints))
    return record


class BestKeeper:
    """Offers of (step, accuracy, weights); keeps the highest accuracy, the earliest step
    on a tie (the weights that reached it first)."""

    def __init__(self, checkpoints: Path) -> None:
        self.checkpoints = checkpoints
        self.record = read_best(checkpoints)

    def offer(self, step: int, accuracy: float, model: Any, tokenizer: Any) -> bool:
        """Save the weights when `accuracy` beats the kept best; whether it did."""
        if self.record is not None and accuracy <= self.record["accuracy"]:
            return False
        save_best(self.checkpoints, step, accuracy, model, tokenizer)
        self.record = {"step": step, "accuracy": accuracy}
        return True

    def summary(self) -> dict[str, Any] | None:
        if self.record is None:
            return None
        return {**self.record, "checkpoint": str(best_dir(self.checkpoints))}
