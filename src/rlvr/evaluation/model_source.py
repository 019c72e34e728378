"""Find and load the model `rlvr eval` was pointed at. On top of what
`rlvr.models.resolve_model` accepts (a model directory, a .gguf file, a packaged-model
alias), a run directory stands for its latest checkpoint (or, asked for, the best one
that `eval.keep_best` kept: checkpoints/best), and a LoRA adapter directory is merged
into its base. Local paths only: nothing is downloaded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any


from rlvr.errors import UserError
from rlvr.models import ModelNotFound, resolve_model
from rlvr.models.lora import is_adapter_dir


BEST = "best"  # the run's best checkpoint (rlvr.training.best writes it)


class ModelSourceError(UserError, ValueError):
    """The path is not a model, checkpoint, adapter or run directory we can load."""


@dataclass(frozen=True)
class ModelSource:
    """What to load. kind: "hf" (a model directory with config.json) or "lora" (an
    adapter directory; `base` is its base model directory)."""

    kind: str
    path: Path
    base: Path | None = None

    def describe(self) -> str:
        return f"{self.kind}:{self.path}" + (f" (base {self.base})" if self.base else "")


def _step_of(path: Path) -> int:
    """The training step in a checkpoint directory's name (step_000100, checkpoint-100)."""
    numbers = re.findall(r"\d+", path.name)
    return int(numbers[-1]) if numbers else -1


def latest_checkpoint(run_dir: Path) -> Path:
    """The newest checkpoint of a run: `checkpoints/latest` (a link or a file naming
    it) when present, else the loadable subdirectory with the highest step number."""
    folder = run_dir / "checkpoints"
    latest = folder / "latest"
    if latest.is_dir():
        return latest.resolve()
    if latest.is_file():
        named = folder / latest.read_text(encoding="utf-8").strip()
        if named.is_dir():
            return named
    # ".tmp-*" folders are checkpoints still being written (or abandoned mid-write);
    # "best" is the best held-out step's weights, not the latest (best_checkpoint)
    candidates = [p for p in folder.iterdir() if p.is_dir() and p.name != BEST
                  and not p.name.startswith(".") and _is_loadable(p)]
    if not candidates:
        raise ModelSourceError(f"{run_dir}: run directory has no checkpoint under "
                               f"{folder} yet")
    return max(candidates, key=lambda p: (_step_of(p), p.name))


def best_checkpoint(run_dir: Path) -> Path:
    """The weights of a run's best held-out evaluation (checkpoints/best, written by a
    run with eval.keep_best=true)."""
    best = run_dir / "checkpoints" / BEST
    if not (run_dir / "checkpoints").is_dir():
        raise ModelSourceError(f"{run_dir}: --best needs a run directory (one with "
                               "checkpoints/)")
    if not _is_loadable(best):
        raise ModelSourceError(f"{run_dir}: the run kept no best checkpoint ({best}); "
                               "train with eval.keep_best=true")
    return best


def _is_loadable(path: Path) -> bool:
    return any((path / name).is_file() for name in ("config.json", "adapter_config.json"))


def _adapter_base(adapter_dir: Path, base: str | Path | None) -> Path:
    """The adapter's base model: `base` if given, else adapter_config.json's
    base_model_name_or_path (a path, absolute or relative to the adapter, or anything
    `resolve_model` accepts)."""
    if base is None:
        config = json.loads((adapter_dir / "adapter_config.json").read_text(encoding="utf-8"))
        base = config.get("base_model_name_or_path") or ""
        if (adapter_dir / str(base) / "config.json").is_file():
            base = adapter_dir / str(base)
    try:
        return resolve_model(base)
    except ModelNotFound as exc:
        raise ModelSourceError(f"{adapter_dir}: LoRA adapter whose base model is not "
                               f"available locally ({exc}); pass --base-model") from None


def resolve(path: str | Path, base: str | Path | None = None,
            best: bool = False) -> ModelSource:
    """Decide what `path` holds (see the module docstring); `best`: a run directory's
    best checkpoint instead of its latest."""
    target = Path(path)
    if best:
        target = best_checkpoint(target)
    elif target.is_dir() and (target / "checkpoints").is_dir() and not _is_loadable(target):
        target = latest_checkpoint(target)
    if is_adapter_dir(target):
        return ModelSource("lora", target, _adapter_base(target, base))
    try:
        return ModelSource("hf", resolve_model(target))
    except ModelNotFound as exc:
        raise ModelSourceError(f"{exc} (or a run directory with checkpoints/, or a LoRA "
                               "adapter directory)") from None


def load(source: ModelSource, dtype: Any = None, device: str = "cpu") -> tuple[Any, Any]:
    """(model, tokenizer) in eval mode on `device`. LoRA adapters are merged into their
    base with peft (the `lora` extra), so generation runs at the base model's speed."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {"dtype": dtype} if dtype is not None else {}
    if source.kind == "lora":
        from rlvr.models.lora import load_with_adapter

        tok_dir = source.path if (source.path / "tokenizer_config.json").is_file() else source.base
        tokenizer = AutoTokenizer.from_pretrained(tok_dir)
        try:
            model = load_with_adapter(source.base, source.path, **kwargs).merge_and_unload()
        except ImportError as exc:
            raise ModelSourceError(f"{source.path}: {exc}") from None
    else:
        tokenizer = AutoTokenizer.from_pretrained(source.path)
        model = AutoModelForCausalLM.from_pretrained(source.path, **kwargs)
    return model.to(device).eval(), tokenizer
