"""Run the `rlvr` CLI in a subprocess exactly as a user would, from any checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SRC = str(Path(__file__).resolve().parents[1] / "src")


def run_cli(*args: str, stdin: str | None = None, timeout: float = 300,
            cwd: str | Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    return subprocess.run([sys.executable, "-m", "rlvr", *args], input=stdin, text=True,
                          capture_output=True, timeout=timeout, env=env, cwd=cwd)
