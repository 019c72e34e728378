"""`rlvr serve` started for a benchmark: a subprocess on a free loopback port, rlvr's
src on its path, returned once its workers are ready (it prints its URL then)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from benchmarks import REPO


def start_server(workers: int, preload: str) -> tuple[subprocess.Popen, str]:
    """The server process and its URL (`http://127.0.0.1:PORT`); `preload`: the
    verifiers its workers load before the first request ("math,code")."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"),
                                                         os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, "-m", "rlvr", "serve", "--port", "0",
                                "--workers", str(workers), "--preload", preload],
                               stdout=subprocess.PIPE, text=True, env=env)
    line = process.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if not match:
        process.kill()
        raise SystemExit(f"rlvr serve did not start: {line!r}")
    return process, f"http://127.0.0.1:{match.group(1)}"
