"""Multi-process training when things go wrong, and `rlvr train --nproc` end to end:
a rank killed mid-run stops the whole job (no process left behind) and the run resumes;
a rank that hangs makes the others fail within distributed.timeout_s; ranks that
disagree on the config, or a setting the ranks cannot run, stop before any training.

Each test launches torchrun (2 CPU ranks, gloo) in a subprocess of its own process
group, killed in a `finally`. ~2 minutes on 2 cores.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from distributed_helpers import (Job, metric_steps, rlvr_train, run_job, tiny_overrides,
                                 torchrun_worker, unavailable_reason, wait_for_step)

REASON = unavailable_reason()
if REASON is None:
    try:
        import psutil  # noqa: F401  (finds the ranks and checks none is left)
    except ImportError:
        REASON = "psutil is not installed (it finds the ranks of a torchrun job)"
if REASON:
    print(f"skipping tests/test_distributed_faults.py: {REASON}")
pytestmark = pytest.mark.skipif(REASON is not None, reason=str(REASON))

PER_STEP = 4 * 2  # tiny_config: prompts_per_step x group_size


def _rollout_steps(run_dir: Path) -> list[int]:
    lines = (run_dir / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["step"] for line in lines]


def _no_survivors(job: Job, within: float = 10.0) -> list[int]:
    deadline = time.monotonic() + within
    while job.survivors() and time.monotonic() < deadline:
        time.sleep(0.2)
    return job.survivors()


def test_a_killed_rank_stops_the_job_and_the_run_resumes_with_every_step_once(tmp_path):
    run_dir, steps = tmp_path / "run", 10
    job = Job(rlvr_train("--nproc", "2", "--quiet", "--run-dir", str(run_dir),
                         *tiny_overrides(f"steps={steps}")), tmp_path / "killed.log")
    try:
        ranks = job.rank_pids(2)
        wait_for_step(run_dir, 1, job, timeout=120)
        job.tree()  # remember every process of the job (launcher, torchrun, ranks, pools)
        os.kill(ranks[1], signal.SIGKILL)
        killed = time.monotonic()
        code = job.wait(timeout=90)
        took = time.monotonic() - killed
        print(f"job exited {code} {took:.1f} s after the kill")
        done = metric_steps(run_dir)
        assert code != 0, job.output()
        assert f"rlvr train --nproc 2 --resume {run_dir}" in job.output()
        assert len(done) < steps, f"the run finished before the kill: {done}"
        assert took < 90
        assert _no_survivors(job) == [], f"left running: {job.survivors()}\n{job.output()}"
    finally:
        job.close()

    code, log = run_job(rlvr_train("--nproc", "2", "--quiet", "--resume", str(run_dir)),
                        tmp_path / "resumed.log", timeout=180)
    assert code == 0, log
    assert metric_steps(run_dir) == list(range(1, steps + 1))
    rollouts = _rollout_steps(run_dir)
    assert rollouts == sorted(rollouts)
    assert {s: rollouts.count(s) for s in set(rollouts)} == \
        {s: PER_STEP for s in range(1, steps + 1)}
    assert json.loads((run_dir / "summary.json").read_text())["steps"] == steps


def test_a_hung_rank_makes_the_others_fail_within_the_timeout(tmp_path):
    # Rank 1 sleeps at the start of step 2: alive, so torchrun does not notice; rank 0
    # waits in the step's reward gather until distributed.timeout_s, then fails.
    run_dir, timeout_s = tmp_path / "run", 10
    job = Job(torchrun_worker(run_dir, "steps=4", f"distributed.timeout_s={timeout_s}",
                              "--stall", "1:2"), tmp_path / "hung.log")
    try:
        wait_for_step(run_dir, 1, job, timeout=120)
        stepped = time.monotonic()
        code = job.wait(timeout=timeout_s + 60)
        took = time.monotonic() - stepped
        log = job.output()
        print(f"job exited {code} {took:.1f} s after step 1")
        assert code != 0, log
        assert took < timeout_s + 45, f"{took:.0f} s"
        assert "rank 1: stalling at step 2" in log
        assert "DistributedError: rank 0: all_gather_object failed" in log, log
        assert "rlvr train --nproc N --resume RUN_DIR" in log
        assert metric_steps(run_dir) == [1]
        assert _no_survivors(job) == [], f"left running: {job.survivors()}\n{log}"
    finally:
        job.close()


def test_ranks_that_disagree_on_the_config_stop_before_training(tmp_path):
    run_dir = tmp_path / "run"
    code, log = run_job(torchrun_worker(run_dir, "steps=2", "rank1:optim.lr=0.02"),
                        tmp_path / "mismatch.log", timeout=120)
    assert code != 0, log
    assert "ranks disagree on the config" in log, log
    assert "ranks [1] differ" in log
    assert not (run_dir / "metrics.jsonl").exists()


@pytest.mark.parametrize("override, field", [
    ("sampling.engine=vllm", "sampling.engine"),
    ("algorithm.minibatches=2", "algorithm.minibatches"),
])
def test_settings_the_ranks_cannot_run_are_refused_before_training(tmp_path, override,
                                                                   field):
    # Under torchrun (every rank's join_ranks) ...
    run_dir = tmp_path / "torchrun"
    code, log = run_job(torchrun_worker(run_dir, "steps=2", override),
                        tmp_path / "refused.log", timeout=120)
    assert code != 0, log
    assert f"ConfigError: {field}: not supported under torchrun (2 ranks)" in log, log
    assert not (run_dir / "metrics.jsonl").exists()
    # ... and by `rlvr train --nproc 2` itself, before any rank starts: exit 2
    run_dir = tmp_path / "cli"
    code, log = run_job(rlvr_train("--nproc", "2", "--run-dir", str(run_dir),
                                   *tiny_overrides("steps=2", override)),
                        tmp_path / "cli.log", timeout=60)
    assert code == 2, log
    assert f"{field}: not supported under torchrun (2 ranks)" in log
    assert "torch.distributed" not in log and not run_dir.exists()


def test_nproc_2_trains_end_to_end(tmp_path):
    run_dir = tmp_path / "run"
    code, log = run_job(rlvr_train("--nproc", "2", "--run-dir", str(run_dir),
                                   *tiny_overrides("steps=2")),
                        tmp_path / "train.log", timeout=180)
    assert code == 0, log
    assert log.count(f"run dir: {run_dir}") == 1  # rank 0 reports
    assert metric_steps(run_dir) == [1, 2]  # written once, by rank 0
    lines = [json.loads(line) for line in
             (run_dir / "rollouts.jsonl").read_text(encoding="utf-8").splitlines()]
    for step in (1, 2):  # every rank's attempts: all prompts, every sample of each
        attempts = [(r["prompt_id"], r["sample"]) for r in lines if r["step"] == step]
        assert len(attempts) == len(set(attempts)) == PER_STEP
        assert len({prompt for prompt, _ in attempts}) == 4
    last = run_dir / "checkpoints" / "step-000002"
    assert (last / "model.safetensors").is_file()
    assert (last / "optimizer" / ".metadata").is_file()
    assert sorted(p.name for p in (last / "optimizer").glob("*.distcp")) == \
        ["__0_0.distcp", "__1_0.distcp"]


def test_nproc_is_refused_under_torchrun_and_a_run_dir_is_required_there(tmp_path,
                                                                         monkeypatch):
    from cli_helpers import run_cli

    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "0")
    refused = run_cli("train", "--nproc", "2", "--run-dir", str(tmp_path / "r"), timeout=60)
    no_dir = run_cli("train", "steps=1", timeout=60, cwd=tmp_path)
    assert refused.returncode == 2 and "drop --nproc" in refused.stderr
    assert no_dir.returncode == 2 and "give --run-dir" in no_dir.stderr


def test_the_ranks_get_the_same_arguments_without_nproc_and_with_one_run_dir():
    from rlvr.cli.main import build_parser
    from rlvr.cli.train import torchrun_arguments
    from train_helpers import tiny_config

    cfg = tiny_config()
    parse = build_parser(only="train").parse_args
    args = parse(["train", "--nproc", "2", "-q", "-c", "c.yaml", "steps=3", "seed=1"])
    ranks = torchrun_arguments(args, cfg)
    assert ranks[:2] == ["--config", "c.yaml"] and ranks[-3:] == ["--quiet", "steps=3",
                                                                   "seed=1"]
    assert ranks[2] == "--run-dir" and ranks[3].startswith(f"runs/{cfg.name}-")  # chosen once
    assert parse(["train", *ranks]).run_dir == ranks[3]
    args = parse(["train", "--resume", "runs/x", "--nproc", "4", "steps=9"])
    assert torchrun_arguments(args, cfg) == ["--resume", "runs/x", "steps=9"]
    args = parse(["train", "--nproc", "2", "--run-dir", "r"])
    assert torchrun_arguments(args, cfg) == ["--run-dir", "r"]
