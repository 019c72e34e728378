"""Multi-turn episodes with asynchronous rollouts (rollout.max_staleness = 1) on the tiny
model in the guess_number environment: the producer runs each episode's turns, the
environment's replies included, and the trainer trains them within the staleness bound.

The check that the producer's episodes are the synchronous loop's: every step's trained
completions (what `pack` hands the update: tokens, loss masks, log-probs) are drawn again
here through the synchronous sampler (loop.generate_shards, the engine, turn renderer
and environment built as run.py builds the trainer's) from the checkpoint of the version
that sampled them, with the step's seed, and must come out the same; step 1 (version 0
in both runs) must also be the synchronous run's own step 1."""

from __future__ import annotations

import pytest
import torch
from safetensors.torch import load_file

from async_helpers import Recorder, metrics, prompts_per_step, replay_draw, rollouts, \
    same_completions
from rlvr.training.run import train
from train_helpers import tiny_config

STEPS, TURNS = 4, 3
# A short warm-start on bare numbers (as configs/demo_multiturn.yaml) so some guesses
# are right: groups with different rewards, so the steps have a gradient.
MULTI_TURN = [f"steps={STEPS}", "checkpoint_every=1", "keep_checkpoints=0",
              "data.path=guess-number-train", "data.eval_path=guess-number-test",
              "data.eval_size=2", "episodes.environment=guess_number",
              f"episodes.max_turns={TURNS}", "episodes.max_tokens=200",
              "sampling.max_new_tokens=4", "reward.verifier=exact", "sft.steps=20",
              "sft.worked_solutions=false", "sft.target_template='{reference}'",
              "sft.lr=3e-3"]


def _run(tmp_path_factory, name: str, *extra: str):
    monkeypatch = pytest.MonkeyPatch()
    try:
        recorder = Recorder(monkeypatch)
        run = tmp_path_factory.mktemp(name) / "run"
        train(tiny_config(*MULTI_TURN, *extra), run)
    finally:
        monkeypatch.undo()
    return run, recorder


@pytest.fixture(scope="module")
def synchronous(tmp_path_factory):
    return _run(tmp_path_factory, "sync")


@pytest.fixture(scope="module")
def k1(tmp_path_factory):
    return _run(tmp_path_factory, "k1", "rollout.max_staleness=1")


def _weights(run, step):
    return load_file(run / f"checkpoints/step-{step:06d}/model.safetensors")


@pytest.mark.slow
def test_multi_turn_k1_trains_within_the_bound_on_the_synchronous_draws(synchronous, k1):
    (sync_run, _), (run, recorder) = synchronous, k1
    rows = metrics(run)
    assert [m["step"] for m in rows] == list(range(1, STEPS + 1))
    P = tiny_config().sampling.prompts_per_step
    for m in rows:
        step = m["step"]
        _, version = recorder.draw(step)
        assert step - 2 <= version <= step - 1  # K = 1, from the groups themselves
        assert m["staleness/max"] <= 1 and m["async/dropped_groups"] == 0
        assert m["staleness/lag_0"] + m["staleness/lag_1"] == P
        assert all(draw_step == step for *_, draw_step in recorder.kept[step])
    assert prompts_per_step(run) == prompts_per_step(sync_run)
    assert any(m["groups_uniform"] < 1 for m in rows)  # a gradient to train on
    before, after = _weights(run, 0), _weights(run, STEPS)
    assert any(not torch.equal(before[k], after[k]) for k in before)


@pytest.mark.slow
def test_the_producers_episodes_are_what_the_synchronous_sampler_draws(synchronous, k1):
    (sync_run, sync_recorder), (run, recorder) = synchronous, k1
    for step in range(1, STEPS + 1):
        indices, version = recorder.draw(step)
        trained = recorder.packed[step]
        same_completions(trained, replay_draw(run, recorder.trainer, step, indices, version))
        # the environment's tokens are in the rows, masked out of the loss
        assert sum(c.loss_mask.count(0) for c in trained if c.loss_mask) > 0
    # step 1: version 0 in both runs, so the synchronous run's own step
    same_completions(recorder.packed[1], sync_recorder.packed[1])
    async_lines = [x for x in rollouts(run) if x["step"] == 1]
    assert all(x.pop("policy_version") == 0 for x in async_lines)  # K >= 1 lines say it
    assert async_lines == [x for x in rollouts(sync_run) if x["step"] == 1]  # transcripts,
    # rewards too


@pytest.mark.slow
def test_multi_turn_episode_metrics_are_reported_from_the_producers_episodes(
        synchronous, k1):
    (sync_run, _), (run, _) = synchronous, k1
    lines = rollouts(run)
    for m in metrics(run):
        mine = [x for x in lines if x["step"] == m["step"]]
        turns = [x["episode"]["turns"] for x in mine]
        assert m["episode/turns_mean"] == pytest.approx(sum(turns) / len(turns))
        assert m["reward/mean"] == pytest.approx(sum(x["reward"] for x in mine) / len(mine))
        for k in range(1, TURNS + 1):
            solved = sum(1 for x in mine if x["reward"] > 0 and x["episode"]["turns"] == k)
            assert m[f"episode/success_by_turn_{k}"] == pytest.approx(solved / len(mine))
        assert m["rollout/prefix_reused_tokens"] > 0  # later turns reuse their episode's
    first, sync_first = metrics(run)[0], metrics(sync_run)[0]
    for key in ("rollout/prefix_prefilled_tokens", "rollout/prefix_reused_tokens",
                "episode/turns_mean", "episode/end_done"):
        assert first[key] == sync_first[key], key


def _registered(monkeypatch, factory):
    from rlvr.environments import registry

    monkeypatch.setitem(registry._REGISTRY, "two_turns_test", registry.EnvironmentSpec(
        "two_turns_test", factory, None, "a test's"))


def test_an_environment_the_producer_cannot_import_is_refused_naming_the_field(
        monkeypatch):
    from rlvr.errors import UserError
    from rlvr.training.async_rollouts import _environment

    _registered(monkeypatch, lambda record, options, limits: None)
    with pytest.raises(UserError, match="episodes.environment: 'two_turns_test' cannot"):
        _environment("two_turns_test")


@pytest.mark.slow
def test_an_environment_the_operators_program_registered_runs_in_the_producer(
        tmp_path, monkeypatch):
    import os
    from pathlib import Path

    from async_helpers import two_turns

    # the producer imports the factory by name, as verifier workers import test rewards
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent),
                                                      os.environ.get("PYTHONPATH", "")]))
    _registered(monkeypatch, two_turns)
    run = tmp_path / "run"
    train(tiny_config("steps=2", "sft.steps=0", "episodes.environment=two_turns_test",
                      "episodes.max_turns=2", "episodes.max_tokens=40",
                      "rollout.max_staleness=1"), run)
    lines = rollouts(run)
    assert [m["step"] for m in metrics(run)] == [1, 2]
    assert lines and all(x["episode"]["turns"] == 2 for x in lines)
    assert all(x["reward"] == pytest.approx(min(1.0, len(x["completion"]) / 6))
               for x in lines)  # the environment's reward, computed by hand
