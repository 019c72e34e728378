"""Find and load the model `rlvr eval` was pointed at: a model directory, a GGUF file
(or a directory holding one), a LoRA adapter directory, or a run directory (its latest
checkpoint). Local paths only: nothing is downloaded.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any


class ModelSourceError(ValueError):
    """The path is not a model, checkpoint, adapter or run directory we can load."""


@dataclass(frozen=True)
class ModelSource:
    """What to load. kind: "hf" (config.json), "gguf" (one .gguf file), "lora" (an
    adapter_config.json; `base` is its base model directory)."""

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
    candidates = [p for p in folder.iterdir() if p.is_dir() and _is_loadable(p)]
    if not candidates:
        raise ModelSourceError(f"{run_dir}: run directory has no checkpoint under "
                               f"{folder} yet")
    return max(candidates, key=lambda p: (_step_of(p), p.name))


def _is_loadable(path: Path) -> bool:
    return any((path / name).is_file() for name in ("config.json", "adapter_config.json")) \
        or any(path.glob("*.gguf"))


def _adapter_base(adapter_dir: Path, base: str | Path | None) -> Path:
    if base is not None:
        return Path(base)
    config = json.loads((adapter_dir / "adapter_config.json").read_text(encoding="utf-8"))
    named = config.get("base_model_name_or_path")
    for candidate in (named, adapter_dir / (named or ""), adapter_dir / "base"):
        if candidate and (Path(candidate) / "config.json").is_file():
            return Path(candidate)
    raise ModelSourceError(f"{adapter_dir}: LoRA adapter whose base model "
                           f"{named!r} is not a local model directory; pass --base-model")


def resolve(path: str | Path, base: str | Path | None = None) -> ModelSource:
    """Decide what `path` holds (see the module docstring)."""
    target = Path(path)
    if not target.exists():
        raise ModelSourceError(f"{target}: no such model, checkpoint or run directory "
                               "(models are loaded from local paths only)")
    if target.is_file():
        if target.suffix == ".gguf":
            return ModelSource("gguf", target)
        raise ModelSourceError(f"{target}: a file that is not .gguf; give a model directory")
    if (target / "checkpoints").is_dir() and not _is_loadable(target):
        target = latest_checkpoint(target)
    if (target / "adapter_config.json").is_file():
        return ModelSource("lora", target, _adapter_base(target, base))
    if (target / "config.json").is_file():
        return ModelSource("hf", target)
    ggufs = sorted(target.glob("*.gguf"))
    if len(ggufs) == 1:
        return ModelSource("gguf", ggufs[0])
    raise ModelSourceError(f"{target}: not a model directory (no config.json), LoRA adapter "
                           "(no adapter_config.json), single .gguf, or run directory "
                           "(no checkpoints/)")


def load(source: ModelSource, dtype: Any = None, device: str = "cpu") -> tuple[Any, Any]:
    """(model, tokenizer) in eval mode on `device`. LoRA adapters are merged into their
    base with peft (the `lora` extra), so generation runs at the base model's speed."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    kwargs: dict[str, Any] = {"dtype": dtype} if dtype is not None else {}
    if source.kind == "gguf":
        folder, name = source.path.parent, source.path.name
        tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
        model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, **kwargs)
    elif source.kind == "lora":
        try:
            from peft import PeftModel
        except ImportError:
            raise ModelSourceError(f"{source.path}: loading a LoRA adapter needs peft "
                                   "(pip install 'rlvr[lora]')") from None
        tok_dir = source.path if (source.path / "tokenizer_config.json").is_file() else source.base
        tokenizer = AutoTokenizer.from_pretrained(tok_dir)
        base = AutoModelForCausalLM.from_pretrained(source.base, **kwargs)
        model = PeftModel.from_pretrained(base, source.path).merge_and_unload()
    else:
        tokenizer = AutoTokenizer.from_pretrained(source.path)
        model = AutoModelForCausalLM.from_pretrained(source.path, **kwargs)
    return model.to(device).eval(), tokenizer
