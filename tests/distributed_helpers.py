"""Multi-process runs for tests: launch torchrun (or `rlvr train --nproc`) in its own
process group, find its ranks, wait with a deadline, and never leave a process behind.

Also a torchrun worker script (a test run with a twist no CLI flag gives):

    python -m torch.distributed.run --nproc-per-node 2 --standalone \\
        tests/distributed_helpers.py OUT_DIR [key=value ...] [rank1:key=value ...] \\
        [--stall RANK:STEP] [--resume]

`rankR:key=value` applies the override on rank R only (ranks that disagree on the
config); `--stall R:S` makes rank R hang (sleep) at the start of RL step S while
torchrun sees it alive (a peer that stops answering).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from train_helpers import plugin_reward

ROOT = Path(__file__).resolve().parents[1]
TESTS = str(ROOT / "tests")
SRC = str(ROOT / "src")

# tiny_config plus what a 2-rank run needs: no warm-start (refused under torchrun), one
# generation shard per rank, a checkpoint every step, a reward an untrained model earns
RUN_OVERRIDES = ["sft.steps=0", "sampling.generation_shards=2", "checkpoint_every=1",
                 *plugin_reward("train_helpers:LengthVerifier")]


def unavailable_reason() -> str | None:
    """Why multi-process tests cannot run here (None: they can)."""
    try:
        import torch.distributed as td
    except ImportError as exc:  # pragma: no cover - torch always imports in this project
        return f"torch.distributed does not import: {exc}"
    if not td.is_available():
        return "torch.distributed is not available in this torch build"
    if not td.is_gloo_available():
        return "the gloo backend is not available in this torch build"
    if not sys.platform.startswith("linux"):
        return "process-tree checks read /proc (Linux only)"
    return None


def env() -> dict[str, str]:
    """The environment of every launched process: src and tests importable (the run's
    config names train_helpers:LengthVerifier), one thread per rank, no GPU."""
    path = os.pathsep.join(p for p in [SRC, TESTS, os.environ.get("PYTHONPATH", "")] if p)
    return {**os.environ, "PYTHONPATH": path, "OMP_NUM_THREADS": "1",
            "CUDA_VISIBLE_DEVICES": ""}


def tiny_overrides(*extra: str) -> list[str]:
    from train_helpers import TINY_OVERRIDES

    return [*TINY_OVERRIDES, *RUN_OVERRIDES, *extra]


def rlvr_train(*args: str) -> list[str]:
    return [sys.executable, "-m", "rlvr", "train", *args]


def torchrun_worker(out_dir: Path, *args: str, nproc: int = 2) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc),
            "--standalone", __file__, str(out_dir), *args]


class Job:
    """A launched command in its own session (process group), output to a log file."""

    def __init__(self, command: list[str], log: Path):
        self.log_path = log
        self._log = open(log, "wb")
        self.proc = subprocess.Popen(command, stdout=self._log, stderr=subprocess.STDOUT,
                                     env=env(), cwd=str(ROOT), start_new_session=True)
        self.seen: set[int] = set()  # every pid of the tree ever observed

    def tree(self) -> list[Any]:
        """The live processes of the job (psutil.Process), the launcher first."""
        import psutil

        try:
            top = psutil.Process(self.proc.pid)
            procs = [top, *top.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []
        self.seen.update(p.pid for p in procs)
        return procs

    def rank_pids(self, world: int, timeout: float = 60) -> dict[int, int]:
        """{rank: pid} of the worker processes (read from their RANK variable)."""
        import psutil

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found: dict[int, int] = {}
            for p in self.tree():
                try:
                    rank = p.environ().get("RANK")
                    if rank is not None and p.environ().get("TORCHELASTIC_RUN_ID"):
                        found[int(rank)] = p.pid
                except (psutil.NoSuchProcess, psutil.AccessDenied):
                    continue
            if len(found) == world:
                return found
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"ranks not found (found {found}); log:\n{self.output()}")

    def wait(self, timeout: float) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"still running after {timeout:.0f} s; log:\n"
                                 f"{self.output()}") from None

    def output(self) -> str:
        self._log.flush()
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-6000:]

    def survivors(self) -> list[int]:
        """Pids of the tree seen so far that are still running (zombies are gone)."""
        import psutil

        alive = []
        for pid in sorted(self.seen):
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                continue
        return alive

    def close(self) -> None:
        """Kill whatever is left: the process group, then any tree member that left it."""
        self.tree()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in self.survivors():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        self._log.close()


def run_job(command: list[str], log: Path, timeout: float) -> tuple[int, str]:
    """Run to the end (killing the tree on any failure); (exit status, log text)."""
    job = Job(command, log)
    try:
        code = job.wait(timeout)
        return code, job.output()
    finally:
        job.close()


def wait_for_step(run_dir: Path, step: int, job: Job, timeout: float) -> list[int]:
    """Block until metrics.jsonl records `step`; the steps it holds then."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        steps = metric_steps(run_dir)
        if step in steps:
            return steps
        if job.proc.poll() is not None:
            raise AssertionError(f"the job ended ({job.proc.returncode}) before step {step}:"
                                 f"\n{job.output()}")
        time.sleep(0.05)
    raise AssertionError(f"no step {step} after {timeout:.0f} s:\n{job.output()}")


def metric_steps(run_dir: Path) -> list[int]:
    path = run_dir / "metrics.jsonl"
    if not path.is_file():
        return []
    steps = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            steps.append(json.loads(line)["step"])
        except (ValueError, KeyError):  # a line being written
            continue
    return steps


def _worker(argv: list[str]) -> None:
    """The torchrun worker script (see the module docstring)."""
    sys.path.insert(0, TESTS)
    import rlvr.training.run as run_module
    from train_helpers import tiny_config

    out, rest = argv[0], argv[1:]
    rank = int(os.environ.get("RANK", "0"))
    resume = "--resume" in rest
    overrides: list[str] = []
    stall: tuple[int, int] | None = None
    it = iter(a for a in rest if a != "--resume")
    for arg in it:
        if arg == "--stall":
            stall_rank, _, stall_step = next(it).partition(":")
            stall = (int(stall_rank), int(stall_step))
        elif arg.startswith("rank") and ":" in arg.split("=")[0]:
            target, _, override = arg.partition(":")
            if int(target[len("rank"):]) == rank:
                overrides.append(override)
        else:
            overrides.append(arg)
    if stall is not None and stall[0] == rank:
        real_step = run_module.rl_step

        def stalling_step(trainer: Any, step: int) -> Any:
            if step == stall[1]:
                print(f"rank {rank}: stalling at step {step}", file=sys.stderr, flush=True)
                time.sleep(3600)
            return real_step(trainer, step)

        run_module.rl_step = stalling_step
    cfg = tiny_config(*RUN_OVERRIDES, *overrides)
    run_module.train(cfg, out, resume=resume)


if __name__ == "__main__":
    _worker(sys.argv[1:])
