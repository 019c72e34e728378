"""Checkpoints: a Hugging Face model dir plus everything needed to continue exactly.

    checkpoints/step-000040/
        config.json, model.safetensors, tokenizer files   (from_pretrained loads them)
        trainer_state.pt   optimizer, scheduler, torch RNG state
        state.json         step, data position, python/numpy RNG states, extra run state

A checkpoint is written into a hidden temp dir and renamed into place, so a run killed
mid-write leaves either the previous checkpoint or the new one, never half of one. A write
that fails (a full disk above all) removes the temp dir and raises CheckpointError naming
the step, the path, the cause and the previous checkpoint, which stays intact.
"""

from __future__ import annotations

import errno
import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlvr.errors import ExternalFault

PREFIX = "step-"
# A write that fails while its device has less than this free is reported as a full disk:
# torch.save's own message for ENOSPC is an opaque "unexpected pos" from its zip writer.
NEARLY_FULL_BYTES = 1 << 20


class CheckpointError(ExternalFault, RuntimeError):
    """A checkpoint could not be written; the message names the step, the path and why,
    and the previous checkpoint (left intact) that a resumed run continues from."""


def capture_rng() -> dict[str, Any]:
    state = np.random.get_state()
    return {"python": _jsonable(random.getstate()),
            "numpy": [state[0], state[1].tolist(), int(state[2]), int(state[3]), float(state[4])]}


def restore_rng(saved: dict[str, Any], torch_state: torch.Tensor,
                cuda_states: list[torch.Tensor] | None) -> None:
    py = saved["python"]
    random.setstate((py[0], tuple(py[1]), py[2]))
    kind, keys, pos, has_gauss, cached = saved["numpy"]
    np.random.set_state((kind, np.array(keys, dtype=np.uint32), pos, has_gauss, cached))
    torch.set_rng_state(torch_state)
    if cuda_states and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(cuda_states)


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    return value


OPTIMIZER_DCP = "optimizer"  # a distributed run's AdamW state (torch.distributed.checkpoint)


def staging_dir(directory: Path, step: int) -> Path:
    return directory / f".tmp-{PREFIX}{step:06d}"


def save_checkpoint(directory: Path, step: int, model: Any, tokenizer: Any,
                    optimizer: torch.optim.Optimizer | None, scheduler: Any,
                    state: dict[str, Any], keep: int = 0, staged: bool = False) -> Path:
    """Write checkpoint `step` under `directory` atomically; keep the newest `keep` (0 = all).
    optimizer None: its state is already in the staging dir (OPTIMIZER_DCP, written by
    every rank of a distributed run; `staged` then says the dir exists already)."""
    directory.mkdir(parents=True, exist_ok=True)
    final = directory / f"{PREFIX}{step:06d}"
    staging = staging_dir(directory, step)
    if not staged:
        shutil.rmtree(staging, ignore_errors=True)
    try:
        _write_staging(staging, step, model, tokenizer, optimizer, scheduler, state)
    except Exception as exc:
        raise _write_failed(directory, step, staging, exc) from exc
    if final.exists():  # re-saving a step (e.g. the final one): replace it
        shutil.rmtree(final)
    staging.rename(final)
    if keep > 0:
        for old in list_checkpoints(directory)[:-keep]:
            shutil.rmtree(old, ignore_errors=True)
    return final


def _write_staging(staging: Path, step: int, model: Any, tokenizer: Any,
                   optimizer: torch.optim.Optimizer | None, scheduler: Any,
                   state: dict[str, Any]) -> None:
    model.save_pretrained(staging)
    tokenizer.save_pretrained(staging)
    torch.save({"optimizer": None if optimizer is None else optimizer.state_dict(),
                "scheduler": scheduler.state_dict(), "torch_rng": torch.get_rng_state(),
                "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None},
               staging / "trainer_state.pt")
    (staging / "state.json").write_text(json.dumps({"step": step, **state, "rng": capture_rng()}),
                                        encoding="utf-8")


def _write_failed(directory: Path, step: int, staging: Path, exc: Exception) -> CheckpointError:
    """The error for a checkpoint whose write failed, after removing its temp dir (a
    full disk is told apart before the removal frees space)."""
    full = _out_of_space(exc, staging)
    shutil.rmtree(staging, ignore_errors=True)
    previous = [p for p in list_checkpoints(directory) if checkpoint_step(p) != step]
    kept = (f"the previous checkpoint step {checkpoint_step(previous[-1])} ({previous[-1]}) "
            "is intact" if previous else "there is no earlier checkpoint")
    cause = "no space left on device" if full else f"{type(exc).__name__}: {str(exc)[:300]}"
    return CheckpointError(f"checkpoint step {step}: {cause} writing {staging}; the partial "
                           f"write was removed and {kept}")


def _out_of_space(exc: Exception, path: Path) -> bool:
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    if "No space left on device" in str(exc) or "os error 28" in str(exc):  # safetensors
        return True
    try:
        return shutil.disk_usage(path if path.exists() else path.parent).free < NEARLY_FULL_BYTES
    except OSError:
        return False


def list_checkpoints(directory: Path) -> list[Path]:
    """Complete checkpoints, oldest first (temp dirs of interrupted writes are ignored)."""
    if not directory.is_dir():
        return []
    found = [p for p in directory.iterdir() if p.is_dir() and p.name.startswith(PREFIX)
             and (p / "state.json").exists()]
    return sorted(found, key=checkpoint_step)


def checkpoint_step(checkpoint: Path) -> int:
    """The RL step a checkpoint directory (step-NNNNNN) holds."""
    return int(checkpoint.name[len(PREFIX):])


def latest_checkpoint(directory: Path) -> Path | None:
    found = list_checkpoints(directory)
    return found[-1] if found else None


def load_trainer_state(checkpoint: Path, optimizer: torch.optim.Optimizer,
                       scheduler: Any, model: Any = None) -> dict[str, Any]:
    """Restore optimizer, scheduler and every RNG from `checkpoint`; return state.json.
    A distributed run's optimizer state (OPTIMIZER_DCP) loads onto `model`'s ranks,
    whatever their number (one process included)."""
    blob = torch.load(checkpoint / "trainer_state.pt", map_location="cpu", weights_only=True)
    if blob["optimizer"] is None:
        from rlvr.distributed.fsdp import load_optimizer

        load_optimizer(model, optimizer, checkpoint / OPTIMIZER_DCP)
    elif _sharded(model):  # one process's state, onto ranks
        from rlvr.distributed.fsdp import load_plain_optimizer

        names = [n for n, p in model.named_parameters() if p.requires_grad]
        load_plain_optimizer(model, names, optimizer, blob["optimizer"])
    else:
        optimizer.load_state_dict(blob["optimizer"])
    scheduler.load_state_dict(blob["scheduler"])
    state = json.loads((checkpoint / "state.json").read_text(encoding="utf-8"))
    restore_rng(state["rng"], blob["torch_rng"], blob["cuda_rng"])
    return state


def _sharded(model: Any) -> bool:
    """Whether `model` is sharded by FSDP2 (its parameters are DTensors)."""
    return model is not None and any(hasattr(p, "full_tensor") for p in model.parameters())
