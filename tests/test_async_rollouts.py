"""Asynchronous rollouts end to end on the tiny model: rollout.max_staleness=0 is the
synchronous run bit for bit; K=1 trains with a producer process whose groups are at
most one version behind and are the problems the synchronous run draws; a producer
killed mid-run stops it with exit 3 and the resume command, and the resume samples
the lost groups again. (The filter, the metrics and the timeout without a process:
test_async_staleness.py.)"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from rlvr.cli.exit_codes import FAULT, OK
from rlvr.cli.main import main
from rlvr.training.run import train
from async_helpers import synchronous_run, tests_on_pythonpath
from train_helpers import TINY_OVERRIDES, plugin_reward, tiny_config

STEPS = 5
# A reward the untrained model earns unevenly, so every step updates the weights.
BASE = [f"steps={STEPS}", "checkpoint_every=1", "keep_checkpoints=0", "data.eval_size=2",
        *plugin_reward("train_helpers:LengthVerifier")]
TIMING = ("time/", "tokens_per_s", "episode/env_seconds")


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch):
    """Verifier workers import the test reward by name."""
    monkeypatch.setenv("PYTHONPATH", tests_on_pythonpath())


def _metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def _prompts_per_step(run: Path) -> dict[int, list[str]]:
    steps: dict[int, list[str]] = {}
    for line in (run / "rollouts.jsonl").read_text().splitlines():
        row = json.loads(line)
        if row["sample"] == 0:
            steps.setdefault(row["step"], []).append(row["prompt_id"])
    return steps


def _weights(run: Path, step: int) -> dict[str, torch.Tensor]:
    return load_file(run / f"checkpoints/step-{step:06d}/model.safetensors")


@pytest.fixture(scope="module")
def synchronous(tmp_path_factory):
    """The synchronous run, without the rollout section at all."""
    return synchronous_run(tmp_path_factory, BASE)


def test_max_staleness_0_is_the_synchronous_run_bit_for_bit(synchronous, tmp_path):
    run = tmp_path / "k0"
    train(tiny_config(*BASE, "rollout.max_staleness=0"), run)
    a, b = _weights(synchronous, STEPS), _weights(run, STEPS)
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert not torch.equal(_weights(run, 0)["model.norm.weight"],
                           b["model.norm.weight"])  # the steps did train
    strip = [{k: v for k, v in m.items() if not k.startswith(TIMING)} for m in
             _metrics(run)]
    assert strip == [{k: v for k, v in m.items() if not k.startswith(TIMING)}
                     for m in _metrics(synchronous)]
    assert not any(k.startswith(("staleness/", "async/")) for k in _metrics(run)[0])
    assert (run / "rollouts.jsonl").read_text() == (synchronous / "rollouts.jsonl").read_text()


@pytest.mark.slow
def test_k1_trains_within_the_staleness_bound_on_the_synchronous_draws(synchronous,
                                                                       tmp_path):
    run = tmp_path / "k1"
    train(tiny_config(*BASE, "rollout.max_staleness=1"), run)
    rows = _metrics(run)
    assert [m["step"] for m in rows] == list(range(1, STEPS + 1))
    P = tiny_config().sampling.prompts_per_step
    for m in rows:
        assert m["staleness/max"] <= 1 and m["async/dropped_groups"] == 0
        assert m["staleness/lag_0"] + m["staleness/lag_1"] == P  # every trained group
        assert m["staleness/mean"] == pytest.approx(m["staleness/lag_1"] / P)
        for key in ("time/trainer_idle", "time/producer_idle", "async/queue_depth",
                    "correction/weight_mean", "correction/clipped_frac", "mismatch/kl"):
            assert key in m, key
    assert rows[0]["staleness/max"] == 0  # nothing published before the first update
    # the same problems each step as the synchronous run, in its order
    assert _prompts_per_step(run) == _prompts_per_step(synchronous)
    assert not torch.equal(_weights(run, 0)["model.norm.weight"],
                           _weights(run, STEPS)["model.norm.weight"])
    assert all(m["time/verify"] > 0 for m in rows)  # the producer's grading seconds
    _graded_as_the_trainers_pool_grades(run)


@pytest.mark.slow
def test_k1_with_two_shards_grades_each_as_it_is_sampled(synchronous, tmp_path):
    """sampling.generation_shards=2: the producer hands each half of a draw to grading
    as it is sampled; the steps still train the synchronous run's problems, every group
    graded (as the trainer's pool grades it) and within the bound."""
    run = tmp_path / "k1-shards"
    train(tiny_config(*BASE, "rollout.max_staleness=1", "sampling.generation_shards=2"), run)
    rows = _metrics(run)
    assert [m["step"] for m in rows] == list(range(1, STEPS + 1))
    P = tiny_config().sampling.prompts_per_step
    for m in rows:
        assert m["staleness/max"] <= 1 and m["staleness/lag_0"] + m["staleness/lag_1"] == P
    assert _prompts_per_step(run) == _prompts_per_step(synchronous)
    _graded_as_the_trainers_pool_grades(run)


def _graded_as_the_trainers_pool_grades(run: Path) -> None:
    """Every trained attempt's verdict (the producer graded it) is what the trainer's
    own pool, built from the run's config, gives for the same completion."""
    from types import SimpleNamespace

    from rlvr.data.records import TaskRecord
    from rlvr.training.rewards import grade_episodes, scoring_pool

    cfg = tiny_config(*BASE, "rollout.max_staleness=1")
    rows = [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]
    records = [TaskRecord(r["prompt"], r["reference"], "arithmetic", r["prompt_id"])
               for r in rows]
    with scoring_pool(cfg, records, "cpu") as pool:
        verdicts, scores = grade_episodes(
            pool, records, [[SimpleNamespace(final_text=r["completion"], reward=None)]
                            for r in rows], cfg.reward.verifier, cfg.reward.options)
    assert [r["verdict"] for r in rows] == [v.to_dict() for v, in verdicts]
    # no reward shaping in this config: the reward is the producer's score
    assert [r["reward"] for r in rows] == scores.flatten().tolist()


def _killing_step(step_to_kill: int):
    """An rl_step that SIGKILLs the producer at the start of one step."""
    import rlvr.training.run as run_module

    real_step = run_module.rl_step

    def step(trainer, number):
        if number == step_to_kill:
            os.kill(trainer.producer.producers.handles[0].process.pid, signal.SIGKILL)
            trainer.producer.producers.handles[0].process.join()
        return real_step(trainer, number)

    return step


@pytest.mark.slow
def test_a_killed_producer_stops_the_run_with_exit_3_and_a_resume_redoes_its_groups(
        synchronous, tmp_path, monkeypatch, capsys):
    run = tmp_path / "killed"
    args = ["train", "--run-dir", str(run), "--quiet", *TINY_OVERRIDES, *BASE,
            "rollout.max_staleness=1"]
    with monkeypatch.context() as patch:
        patch.setattr("rlvr.training.run.rl_step", _killing_step(2))
        assert main(args) == FAULT
    err = capsys.readouterr().err
    assert "rollout producer (pid" in err and "exited with status -9" in err
    assert f"rlvr train --resume {run}" in err
    trained = [m["step"] for m in _metrics(run)]
    assert trained and max(trained) < STEPS
    assert main(["train", "--resume", str(run), "--quiet"]) == OK
    assert [m["step"] for m in _metrics(run)] == list(range(1, STEPS + 1))
    # the groups in flight at the kill were sampled again: every step's problems are
    # the synchronous run's
    assert _prompts_per_step(run) == _prompts_per_step(synchronous)


@pytest.mark.slow
def test_the_producer_is_stopped_when_the_run_is_interrupted(tmp_path, monkeypatch):
    import rlvr.training.run as run_module

    real_step, seen = run_module.rl_step, {}

    def interrupted(trainer, number):
        seen["pid"] = trainer.producer.producers.handles[0].process.pid
        if number == 2:
            raise KeyboardInterrupt
        return real_step(trainer, number)

    monkeypatch.setattr("rlvr.training.run.rl_step", interrupted)
    with pytest.raises(KeyboardInterrupt):
        train(tiny_config(*BASE, "rollout.max_staleness=1"), tmp_path / "run")
    with pytest.raises(ProcessLookupError):  # stopped and reaped
        os.kill(seen["pid"], 0)
