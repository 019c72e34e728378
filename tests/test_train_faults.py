"""Trainer faults end to end, on the real `rlvr train` CLI and the tiny model: a SIGKILL
mid-RL, then --resume; a disk that fills while a checkpoint is written; a verifier
worker killed while it grades an item of an RL step. (A verification server that dies
mid-step: test_serve_train_faults.py; a worker killed in `rlvr verify`: test_pool.py.)"""

from __future__ import annotations

import json
import os
import subprocess

import pytest
import torch
from safetensors.torch import load_file

from fault_helpers import (Cli, complete_checkpoints, logged, logged_steps, run_rlvr,
                           wait_until)
from train_helpers import TINY_OVERRIDES, plugin_reward, pop_seams

TIMING = ("time/", "tokens_per_s", "episode/env_seconds")
EVERY = 3  # checkpoint_every
STEPS = 10
PACED = [*TINY_OVERRIDES, f"steps={STEPS}", f"checkpoint_every={EVERY}", "keep_checkpoints=0",
         "algorithm.minibatches=2", *plugin_reward("fault_helpers:PacedLengthVerifier")]


def _comparable(run_dir):
    """metrics.jsonl without wall-clock fields, and each step's recorded paths apart
    (train_helpers.SEAMS: names, not numbers)."""
    rows = [{k: v for k, v in m.items() if not k.startswith(TIMING)} for m in logged(run_dir)]
    return rows, pop_seams(rows)


def _assert_same_run(part, full, last_step):
    name = f"checkpoints/step-{last_step:06d}/model.safetensors"
    a, b = load_file(full / name), load_file(part / name)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    (rows_part, paths_part), (rows_full, paths_full) = _comparable(part), _comparable(full)
    assert paths_part == paths_full
    # float rounding only: MKL may differ in the last bit with its inputs' alignment
    assert rows_part == [pytest.approx(m, rel=1e-6, abs=1e-9) for m in rows_full]
    assert (part / "rollouts.jsonl").read_text() == (full / "rollouts.jsonl").read_text()
    summaries = [json.loads((d / "summary.json").read_text()) for d in (part, full)]
    assert summaries[0]["eval"] == summaries[1]["eval"]


@pytest.mark.slow
def test_sigkill_mid_rl_resumes_to_the_uninterrupted_run(tmp_path):
    full, part = tmp_path / "full", tmp_path / "part"
    # The uninterrupted run with the same seed, alongside (its results do not depend on
    # timing), so the test costs little more than the killed run and its resume.
    reference = Cli(tmp_path / "log-full", "train", "--run-dir", str(full), *PACED)
    victim = Cli(tmp_path / "log-part", "train", "--run-dir", str(part), *PACED)
    try:
        # Past a checkpoint, and a few steps into the next interval.
        wait_until(lambda: max(logged_steps(part), default=0) >= EVERY + 2,
                   f"step {EVERY + 2} in metrics.jsonl", victim)
        victim.kill()
        assert victim.process.returncode == -9
        killed_at, saved = max(logged_steps(part)), max(complete_checkpoints(part))
        assert killed_at < STEPS, "the run ended before the kill: slow its steps down"
        # The newest complete checkpoint is at most one interval behind the last logged
        # step (a checkpoint is written right after its step is logged).
        assert saved >= EVERY and killed_at - saved <= EVERY
        print(f"killed after step {killed_at}; newest complete checkpoint: step {saved}")

        resumed = run_rlvr("train", "--resume", str(part))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        assert f"resuming {part} from step {saved}" in resumed.stderr
        assert reference.wait() == 0, reference.stderr()[-3000:]
    finally:
        victim.stop()
        reference.stop()
    assert logged_steps(part) == list(range(1, STEPS + 1))  # each step once, in order
    rollout_steps = [r["step"] for r in logged(part, "rollouts.jsonl")]
    assert rollout_steps == sorted(rollout_steps) and set(rollout_steps) == set(range(1, 11))
    _assert_same_run(part, full, STEPS)


@pytest.fixture
def small_disk(tmp_path):
    """A 400 KiB tmpfs: room for the tiny model's step-0 checkpoint (~100 KiB, no
    optimizer moments yet) and one more (~216 KiB), not a third. Skipped, saying why,
    where mounting is not permitted (not root, or a container without CAP_SYS_ADMIN)."""
    mount_point = tmp_path / "run" / "checkpoints"
    mount_point.mkdir(parents=True)
    if os.geteuid() != 0:
        reason = "a full disk needs a small tmpfs, and mounting one needs root"
        print(reason)
        pytest.skip(reason)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=400k", "tmpfs",
                           str(mount_point)], capture_output=True, text=True)
    if done.returncode != 0:
        reason = f"cannot mount a tmpfs here: {done.stderr.strip() or done.returncode}"
        print(reason)
        pytest.skip(reason)
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], check=False)


@pytest.mark.slow
def test_full_disk_mid_checkpoint_keeps_the_previous_one_and_resumes(small_disk):
    run_dir = small_disk.parent
    settings = [*TINY_OVERRIDES, "steps=6", "checkpoint_every=2", "keep_checkpoints=0",
                *plugin_reward("train_helpers:LengthVerifier")]
    failed = run_rlvr("train", "--run-dir", str(run_dir), *settings)
    assert failed.returncode == 3, failed.stderr[-3000:]
    # step 0 and step 2 fit, step 4 does not
    staging = small_disk / ".tmp-step-000004"
    assert (f"rlvr train: checkpoint step 4: no space left on device writing {staging}; the "
            f"partial write was removed and the previous checkpoint step 2 "
            f"({small_disk / 'step-000002'}) is intact") in failed.stderr
    assert (f"the run stopped after step 4; once that is fixed, continue it from its last "
            f"checkpoint (step 2): rlvr train --resume {run_dir}") in failed.stderr
    assert "Traceback" not in failed.stderr
    assert sorted(p.name for p in small_disk.iterdir()) == ["step-000000", "step-000002"]
    assert complete_checkpoints(run_dir) == [0, 2]
    _assert_loads(small_disk / "step-000002", step=2)

    # Free space (grow the mount), then resume: it continues from step 2, not from 0.
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    resumed = run_rlvr("train", "--resume", str(run_dir))
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert f"resuming {run_dir} from step 2" in resumed.stderr
    assert logged_steps(run_dir) == [1, 2, 3, 4, 5, 6]
    assert json.loads((run_dir / "summary.json").read_text())["steps"] == 6
    assert complete_checkpoints(run_dir) == [0, 2, 4, 6]


def _assert_loads(checkpoint, step):
    """A checkpoint a resume can use: the model loads with transformers, the trainer
    state with torch, and state.json names its step."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(checkpoint)
    assert sum(p.numel() for p in model.parameters()) > 0
    blob = torch.load(checkpoint / "trainer_state.pt", map_location="cpu", weights_only=True)
    assert blob["optimizer"]["state"]  # AdamW moments of the steps before
    assert json.loads((checkpoint / "state.json").read_text())["step"] == step


@pytest.mark.parametrize("free_bytes, cause", [
    (10 << 30, "RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos 576 "
               "vs 534"),
    (4096, "no space left on device"),  # torch.save's own words for ENOSPC are the above
])
def test_a_failed_checkpoint_write_is_named_and_cleaned_up(tmp_path, monkeypatch, free_bytes,
                                                          cause):
    from collections import namedtuple

    from rlvr.training import checkpoint as ck
    from rlvr.training.tiny import TinyModelSpec, char_tokenizer, tiny_llama

    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, TinyModelSpec(hidden_size=16, intermediate_size=32,
                                                num_layers=1, num_heads=2))
    optimizer = torch.optim.AdamW(model.parameters())
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    first = ck.save_checkpoint(tmp_path, 1, model, tokenizer, optimizer, scheduler, {})

    def opaque_failure(*args, **kwargs):
        raise RuntimeError("[enforce fail at inline_container.cc:672] . unexpected pos 576 "
                           "vs 534")

    monkeypatch.setattr(ck.torch, "save", opaque_failure)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(ck.shutil, "disk_usage", lambda _: usage(1 << 40, 0, free_bytes))
    with pytest.raises(ck.CheckpointError) as caught:
        ck.save_checkpoint(tmp_path, 2, model, tokenizer, optimizer, scheduler, {})
    assert str(caught.value) == (
        f"checkpoint step 2: {cause} writing {tmp_path / '.tmp-step-000002'}; the partial "
        f"write was removed and the previous checkpoint step 1 ({first}) is intact")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step-000001"]


@pytest.mark.slow
def test_verifier_worker_killed_mid_step_errors_that_rollout_and_the_run_goes_on(tmp_path):
    import psutil

    arm, marker, run_dir = tmp_path / "arm", tmp_path / "busy.pid", tmp_path / "run"
    trainer = Cli(tmp_path / "log", "train", "--run-dir", str(run_dir), *TINY_OVERRIDES,
                  "steps=4", "checkpoint_every=0", "reward.timeout_s=120",
                  *plugin_reward("fault_helpers:KilledWhenArmed"),
                  f"reward.options={{arm: {arm}, marker: {marker}}}")
    try:
        wait_until(lambda: logged_steps(run_dir) == [1], "step 1 in metrics.jsonl", trainer)
        arm.write_text("")  # the next item graded (in a later RL step) holds its worker
        wait_until(marker.exists, "a worker holding an item", trainer, timeout=60)
        pid = int(marker.read_text())
        assert pid in {p.pid for p in psutil.Process(trainer.pid).children(recursive=True)}
        psutil.Process(pid).kill()
        assert trainer.wait(timeout=120) == 0, trainer.stderr()[-3000:]
    finally:
        trainer.stop()
    assert logged_steps(run_dir) == [1, 2, 3, 4]
    rollouts = logged(run_dir, "rollouts.jsonl")
    assert len(rollouts) == 4 * 8
    killed = [r for r in rollouts if r["verdict"]["reason"] == "error"]
    assert len(killed) == 1 and killed[0]["step"] >= 2
    assert killed[0]["verdict"] == {"score": 0.0, "passed": False, "reason": "error", "details":
                                    {"error": "verifier process died (exit code -9)"}}
    assert killed[0]["reward"] == 0.0
    assert all(r["verdict"]["reason"] == "length" for r in rollouts if r is not killed[0])
