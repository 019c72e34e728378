"""Faults injected into real processes: `rlvr train` / `rlvr verify` started as a user
starts them, watched through the files they write, and killed or starved from outside.
Verifiers here are named by import path ("fault_helpers:...") in worker processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from cli_helpers import SRC

TESTS = str(Path(__file__).resolve().parent)


def cli_env() -> dict[str, str]:
    """The environment of a CLI subprocess: this checkout's src, and tests/ so worker
    processes can import the verifiers below."""
    return {**os.environ,
            "PYTHONPATH": os.pathsep.join([SRC, TESTS, os.environ.get("PYTHONPATH", "")])}


def run_rlvr(*args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """`python -m rlvr ARGS` to completion, in cli_env()."""
    return subprocess.run([sys.executable, "-m", "rlvr", *args], text=True,
                          capture_output=True, timeout=timeout, env=cli_env(),
                          stdin=subprocess.DEVNULL)


class Cli:
    """`python -m rlvr ARGS` in the background; stdout and stderr go to files (a pipe
    nobody reads would stall a chatty process)."""

    def __init__(self, log_dir: Path, *args: str) -> None:
        log_dir.mkdir(parents=True, exist_ok=True)
        self.out_path, self.err_path = log_dir / "stdout.txt", log_dir / "stderr.txt"
        with open(self.out_path, "w") as out, open(self.err_path, "w") as err:
            self.process = subprocess.Popen([sys.executable, "-m", "rlvr", *args],
                                            stdout=out, stderr=err, env=cli_env(),
                                            stdin=subprocess.DEVNULL)

    @property
    def pid(self) -> int:
        return self.process.pid

    def wait(self, timeout: float = 240) -> int:
        return self.process.wait(timeout=timeout)

    def stderr(self) -> str:
        return self.err_path.read_text()

    def stdout(self) -> str:
        return self.out_path.read_text()

    def kill(self) -> None:
        """SIGKILL (as the OOM killer or a preempting scheduler would), then reap it."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        """For finally blocks: the process and its verifier workers are gone."""
        import psutil

        try:
            children = psutil.Process(self.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            children = []
        self.kill()
        for child in children:  # orphaned workers would exit on EOF; do not wait for it
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass


def wait_until(condition: Callable[[], bool], what: str, process: Cli | None = None,
               timeout: float = 180.0, poll_s: float = 0.02) -> None:
    """Poll `condition`; fail naming `what` (and the process's stderr if it ended)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if process is not None and process.process.poll() is not None:
            raise AssertionError(f"process ended (exit {process.process.returncode}) before "
                                 f"{what}:\n{process.stderr()[-3000:]}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(poll_s)


def logged(run_dir: Path, name: str = "metrics.jsonl") -> list[dict]:
    """The complete JSON lines of a run file (a line cut by a kill is skipped)."""
    path = run_dir / name
    if not path.is_file():
        return []
    rows = []
    for line in path.read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def logged_steps(run_dir: Path) -> list[int]:
    return [row["step"] for row in logged(run_dir)]


def complete_checkpoints(run_dir: Path) -> list[int]:
    """Steps of the complete checkpoints (state.json is written last, then renamed)."""
    directory = run_dir / "checkpoints"
    if not directory.is_dir():
        return []
    return sorted(int(p.name[len("step-"):]) for p in directory.iterdir()
                  if p.name.startswith("step-") and (p / "state.json").is_file())


class PacedLengthVerifier:
    """train_helpers.LengthVerifier's verdicts, each after a short sleep: RL steps last
    long enough (~0.3 s) for a test to kill the run between two of them."""

    name = "paced-length"

    def check_reference(self, reference):
        return None

    def verify(self, completion, reference):
        from train_helpers import LengthVerifier

        time.sleep(0.04)
        return LengthVerifier().verify(completion, reference)


class Marked:
    """completion "wait:PATH": writes this worker's pid to PATH and sleeps until killed;
    any other completion scores float(completion)."""

    name = "marked"

    def check_reference(self, reference):
        return None

    def verify(self, completion, reference):
        from rlvr.verifiers.base import Verdict

        if completion.startswith("wait:"):
            marker = Path(completion[len("wait:"):])
            marker.with_suffix(".tmp").write_text(str(os.getpid()))
            marker.with_suffix(".tmp").rename(marker)  # whole, or not there yet
            time.sleep(3600)
        score = float(completion)
        return Verdict(score, score == 1.0, "ok", {"pid": os.getpid()})


class KilledWhenArmed:
    """train_helpers.LengthVerifier's verdicts, except once: the first item graded after
    the file `arm` appears writes this worker's pid to `marker` and sleeps until killed
    (reward.options={arm: PATH, marker: PATH})."""

    name = "killed-when-armed"

    def __init__(self, arm: str = "", marker: str = "") -> None:
        self.arm, self.marker = Path(arm), Path(marker)

    def check_reference(self, reference):
        return None

    def verify(self, completion, reference):
        from train_helpers import LengthVerifier

        if self.arm.is_file() and not self.marker.exists():
            self.marker.with_suffix(".tmp").write_text(str(os.getpid()))
            self.marker.with_suffix(".tmp").rename(self.marker)
            time.sleep(3600)
        time.sleep(0.02)  # steps long enough for the test to arm between two of them
        return LengthVerifier().verify(completion, reference)
