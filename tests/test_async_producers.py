"""Several rollout producers (rollout.producers = 2) on the tiny model, K = 1 and K = 2:
each step's draw is the problems one producer (and the synchronous run) draws, sampled
with that step's seed (checked by drawing each step again through the synchronous
sampler from the checkpoint of the version that sampled it); step s comes from producer
(s - 1) mod 2; no group trains more than K versions after the weights that sampled it.
A killed producer stops the run with exit 3 naming it, and the resume completes the
run on the synchronous draws. (The waits, the names and the draws without processes:
test_async_staleness.py.)"""

from __future__ import annotations

import os
import signal

import pytest
import torch
from safetensors.torch import load_file

from async_helpers import (Recorder, metrics, prompts_per_step, replay_draw, same_completions,
                           synchronous_run, tests_on_pythonpath)
from rlvr.cli.exit_codes import FAULT, OK
from rlvr.cli.main import main
from rlvr.training.prompt_order import PromptOrder
from rlvr.training.run import train
from train_helpers import TINY_OVERRIDES, plugin_reward, tiny_config

STEPS, PRODUCERS = 5, 2
# A reward the untrained model earns unevenly, so every step updates the weights.
BASE = [f"steps={STEPS}", "checkpoint_every=1", "keep_checkpoints=0", "data.eval_size=2",
        *plugin_reward("train_helpers:LengthVerifier")]


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch):
    """Verifier workers import the test reward by name."""
    monkeypatch.setenv("PYTHONPATH", tests_on_pythonpath())


@pytest.fixture(scope="module")
def synchronous(tmp_path_factory):
    return synchronous_run(tmp_path_factory, BASE)


@pytest.mark.slow
@pytest.mark.parametrize("staleness", [1, 2])
def test_two_producers_train_the_single_producers_draws_within_the_bound(
        synchronous, tmp_path, monkeypatch, staleness):
    recorder = Recorder(monkeypatch)
    run = tmp_path / "run"
    cfg = tiny_config(*BASE, f"rollout.max_staleness={staleness}",
                      f"rollout.producers={PRODUCERS}")
    train(cfg, run)
    rows = metrics(run)
    assert [m["step"] for m in rows] == list(range(1, STEPS + 1))
    P = cfg.sampling.prompts_per_step
    order = PromptOrder(len(recorder.trainer.records), cfg.seed)  # the data order by hand
    for m in rows:
        step = m["step"]
        indices, version = recorder.draw(step)
        assert indices == order.next(P)
        assert [(producer, draw_step) for _, _, producer, draw_step in recorder.kept[step]] \
            == [((step - 1) % PRODUCERS, step)] * P
        assert step - 1 - staleness <= version <= step - 1  # never older than K versions
        assert m["staleness/max"] <= staleness and m["async/dropped_groups"] == 0
        assert sum(m[f"staleness/lag_{k}"] for k in range(staleness + 1)) == P
        assert m["time/producer_idle"] >= 0 and m["async/queue_depth"] >= 0
        # the step's seed, whichever producer drew it: the synchronous sampler agrees
        same_completions(recorder.packed[step],
                         replay_draw(run, recorder.trainer, step, indices, version))
    assert prompts_per_step(run) == prompts_per_step(synchronous)
    before = load_file(run / "checkpoints/step-000000/model.safetensors")
    after = load_file(run / f"checkpoints/step-{STEPS:06d}/model.safetensors")
    assert any(not torch.equal(before[k], after[k]) for k in before)


@pytest.mark.slow
def test_a_killed_producer_is_named_and_the_resume_completes_the_run(
        synchronous, tmp_path, monkeypatch, capsys):
    import rlvr.training.run as run_module

    real_step, killed = run_module.rl_step, {}

    def step(trainer, number):
        if number == 2:  # producer 1 samples steps 2, 4, ...
            process = trainer.producer.producers.handles[1].process
            killed["pid"] = process.pid
            os.kill(process.pid, signal.SIGKILL)
            process.join()
        return real_step(trainer, number)

    run = tmp_path / "killed"
    args = ["train", "--run-dir", str(run), "--quiet", *TINY_OVERRIDES, *BASE,
            "rollout.max_staleness=1", f"rollout.producers={PRODUCERS}"]
    with monkeypatch.context() as patch:
        patch.setattr("rlvr.training.run.rl_step", step)
        assert main(args) == FAULT
    err = capsys.readouterr().err
    assert f"rollout producer 1 of 2 (pid {killed['pid']}; steps 2, 4, 6, ...)" in err
    assert "exited with status -9" in err
    assert f"rlvr train --resume {run}" in err
    trained = [m["step"] for m in metrics(run)]
    assert max(trained, default=0) < STEPS
    assert main(["train", "--resume", str(run), "--quiet"]) == OK
    assert [m["step"] for m in metrics(run)] == list(range(1, STEPS + 1))
    assert prompts_per_step(run) == prompts_per_step(synchronous)
