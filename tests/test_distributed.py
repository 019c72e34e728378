"""Two ranks (torchrun, FSDP2 over gloo) train exactly what one process trains.

One process with `sampling.generation_shards=2` samples the step's prompts as two seeded
shards, exactly as two ranks do (one shard each); from there the weights must agree to
float rounding after several RL steps, for full fine-tuning and LoRA, and a 2-rank run
stopped and resumed (on 2 ranks, or by 1 process) must end where the uninterrupted one
does. Every run is the `rlvr train` CLI in a subprocess; the reference is the one-process
run, computed independently of every distributed code path (it never joins a group).

Also, in-process: the single-process `Dist` is the identity, and metrics reduce as
documented (rlvr.distributed.context)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from rlvr.distributed.context import Dist, reduce_metrics
from train_helpers import TINY_OVERRIDES, plugin_reward

ROOT = Path(__file__).resolve().parents[1]
STEPS = 3
RUN = [*TINY_OVERRIDES, "sft.steps=0", "sampling.generation_shards=2", "checkpoint_every=1",
       *plugin_reward("train_helpers:LengthVerifier"), "optim.lr=1e-3",
       "optim.warmup_steps=0", "keep_checkpoints=0"]
needs_gloo = pytest.mark.skipif(not torch.distributed.is_available()
                                or not torch.distributed.is_gloo_available(),
                                reason="torch.distributed with gloo is not available here")


def rlvr_train(args: list[str], ranks: int) -> None:
    launcher = ([sys.executable, "-m", "torch.distributed.run", "--standalone",
                 f"--nproc-per-node={ranks}", "-m", "rlvr"] if ranks > 1
                else [sys.executable, "-m", "rlvr"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"),
                                                        str(ROOT / "tests")])}
    done = subprocess.run([*launcher, "train", "--quiet", *args], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def weights(run: Path, step: int) -> dict[str, torch.Tensor]:
    directory = run / "checkpoints" / f"step-{step:06d}"
    return {k: v for f in sorted(directory.glob("*.safetensors"))
            for k, v in load_file(f).items()}


def gap(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert set(a) == set(b)
    return max(float((a[k] - b[k]).abs().max()) for k in a)


def metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One process and two ranks, STEPS steps each: full fine-tuning, LoRA, and a KL
    penalty against the reference (sharded like the policy on the ranks). Also the
    stopped runs the resume tests continue (each test resumes its own copy): step 1 of
    RUN on two ranks ("stopped", 2) and by one process ("stopped", 1).

    The runs are independent subprocesses (nothing depends on timing: the same seed, the
    same results), so two go at a time: a one-process run, or torchrun's own start-up,
    leaves a core of the 2-core CI machine idle that the other run fills."""
    root = tmp_path_factory.mktemp("distributed")
    jobs = {}
    for name, extra in (("full", []), ("lora", ["model.lora.enabled=true"]),
                        ("kl", ["algorithm.kl_beta=0.1"])):  # the reference sharded too
        for ranks in (1, 2):
            jobs[name, ranks] = [f"steps={STEPS}", *RUN, *extra]
    for ranks in (2, 1):
        jobs["stopped", ranks] = ["steps=1", *RUN]
    out = {key: root / f"{key[0]}-{key[1]}" for key in jobs}
    with ThreadPoolExecutor(max_workers=2) as pool:
        launched = [pool.submit(rlvr_train, ["--run-dir", str(out[key]), *args], key[1])
                    for key, args in jobs.items()]
        for job in launched:
            job.result()  # a failed run's assertion (its stderr) surfaces here
    return out


def stopped_copy(runs, ranks: int, path: Path) -> Path:
    """A copy of the run stopped after step 1 on `ranks` (1 or 2), to resume at `path`."""
    shutil.copytree(runs["stopped", ranks], path)
    return path


@needs_gloo
@pytest.mark.parametrize("name", ["full", "lora", "kl"])
def test_two_ranks_end_at_the_one_process_weights(runs, name):
    one, two = runs[name, 1], runs[name, 2]
    moved = gap(weights(one, STEPS), weights(one, 0))
    assert moved > 1e-4  # the steps moved the weights: equal weights are not trivial
    assert gap(weights(two, STEPS), weights(one, STEPS)) <= 1e-5
    for a, b in zip(metrics(one), metrics(two), strict=True):
        assert a["reward/mean"] == b["reward/mean"]  # the same samples, graded the same
        assert b["loss"] == pytest.approx(a["loss"], abs=1e-6)
        assert b["grad_norm"] == pytest.approx(a["grad_norm"], rel=1e-5)
        assert b["update/path"] == "plain"  # the distributed path says which it ran
        assert b["update/path_reason"] == (  # and why: not asked for, FSDP's
            "FSDP runs the plain update (the fast paths are single-process)")
        assert b["rollout/path"] == a["rollout/path"]  # each rank decodes as one process
        if name == "kl":  # the penalty was measured, against the same reference; with
            # it every row runs in one process too, so the statistics cover the same
            # tokens: means the ranks hold unequal shares of, combined by token count
            assert b["kl"] == pytest.approx(a["kl"], abs=1e-7) and "kl" in a
            assert b["entropy"] == pytest.approx(a["entropy"], rel=1e-5)


@needs_gloo
def test_two_ranks_write_one_log_with_every_ranks_attempts(runs):
    two = runs["full", 2]
    assert [m["step"] for m in metrics(two)] == list(range(1, STEPS + 1))
    rollouts = (two / "rollouts.jsonl").read_text().splitlines()
    one = (runs["full", 1] / "rollouts.jsonl").read_text().splitlines()
    assert [json.loads(line)["completion"] for line in rollouts] == \
        [json.loads(line)["completion"] for line in one]
    assert (two / "checkpoints" / f"step-{STEPS:06d}" / "optimizer").is_dir()


@needs_gloo
@pytest.mark.parametrize("ranks", [2, 1])
def test_resumed_two_rank_run_equals_the_uninterrupted_one(runs, tmp_path, ranks):
    """Stopped after step 1 on two ranks, resumed on `ranks` (2, or 1 process reading
    the two ranks' optimizer shards)."""
    path = stopped_copy(runs, 2, tmp_path / "resumed")  # steps=1 of RUN, on 2 ranks
    rlvr_train(["--resume", str(path), f"steps={STEPS}"], ranks)
    assert gap(weights(path, STEPS), weights(runs["full", 2], STEPS)) <= 1e-5
    assert [m["step"] for m in metrics(path)] == list(range(1, STEPS + 1))


@needs_gloo
def test_one_process_checkpoint_resumes_on_two_ranks(runs, tmp_path):
    """Stopped after step 1 by one process (its optimizer state a plain state dict),
    resumed on two ranks: the one-process uninterrupted run's weights."""
    path = stopped_copy(runs, 1, tmp_path / "widened")  # steps=1 of RUN, by 1 process
    rlvr_train(["--resume", str(path), f"steps={STEPS}"], 2)
    assert gap(weights(path, STEPS), weights(runs["full", 1], STEPS)) <= 1e-5
    assert [m["step"] for m in metrics(path)] == list(range(1, STEPS + 1))


def test_single_process_dist_is_the_identity():
    alone = Dist()
    value = torch.tensor([1.5, 2.0])
    assert not alone.active and alone.is_main and alone.my_shards(3) == [0, 1, 2]
    assert alone.gather({"a": 1}) == [{"a": 1}] and alone.sum(value) is value
    line = {"step": 3, "loss": 0.5}
    assert reduce_metrics(alone, line) is line


def test_metrics_reduce_by_kind(monkeypatch):
    two = Dist(rank=0, world=2)
    lines = [{"step": 4, "loss": 1.0, "response_length/max": 7.0, "ratio_min": 0.5,
              "time/step": 2.0, "tokens_per_s": 100.0, "update/path": "plain",
              "reward/mean": 0.25},
             {"step": 4, "loss": 3.0, "response_length/max": 9.0, "ratio_min": 0.25,
              "time/step": 3.0, "tokens_per_s": 50.0, "update/path": "plain",
              "reward/mean": 0.75}]
    for line, entropy in zip(lines, (0.5, 2.0)):
        line["entropy"] = entropy  # a mean over the rank's tokens: 30 and 10 of them
    monkeypatch.setattr(Dist, "gather", lambda self, value: list(zip(lines, (30.0, 10.0))))
    out = reduce_metrics(two, lines[0], keep=("step", "reward/mean"), tokens=30.0,
                         per_token=("entropy",))
    assert out == {"step": 4, "loss": 2.0, "response_length/max": 9.0, "ratio_min": 0.25,
                   "time/step": 3.0, "tokens_per_s": 150.0, "update/path": "plain",
                   "reward/mean": 0.25, "entropy": (0.5 * 30 + 2.0 * 10) / 40}
    assert two.my_shards(4) == [0, 2] and Dist(rank=1, world=2).my_shards(4) == [1, 3]
