"""A run interrupted after a checkpoint and resumed ends exactly where an uninterrupted
run ends: same parameters, same metrics, same rollouts (CPU, fixed seeds)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

import rlvr.training.run as run_module
from rlvr.config import ConfigError, load_config
from rlvr.training.config import TrainConfig
from rlvr.training.resume import resume_config
from rlvr.training.run import train
from train_helpers import pop_seams, tiny_config

TIMING = ("time/", "tokens_per_s", "episode/env_seconds")


def _logged(path):
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    return [{k: v for k, v in m.items() if not k.startswith(TIMING)} for m in lines]


def test_resume_matches_uninterrupted_run(tmp_path, monkeypatch):
    cfg = tiny_config("steps=5", "checkpoint_every=2", "keep_checkpoints=0",
                      "algorithm.epochs=2", "algorithm.minibatches=2")
    full = tmp_path / "full"
    train(cfg, full)

    # Second run: killed at the start of step 4, after step 3 was logged but not saved.
    real_step = run_module.rl_step

    def dying_step(trainer, step):
        if step == 4:
            raise KeyboardInterrupt
        return real_step(trainer, step)

    part = tmp_path / "part"
    monkeypatch.setattr(run_module, "rl_step", dying_step)
    with pytest.raises(KeyboardInterrupt):
        train(cfg, part)
    assert [m["step"] for m in _logged(part / "metrics.jsonl")] == [1, 2, 3]
    monkeypatch.setattr(run_module, "rl_step", real_step)
    train(cfg, part, resume=True)

    a = load_file(full / "checkpoints/step-000005/model.safetensors")
    b = load_file(part / "checkpoints/step-000005/model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # Metrics to float rounding: MKL's matmul results may differ in the last bit with the
    # memory alignment of its inputs (exact under MKL_CBWR=COMPATIBLE); weights are exact.
    logged_part, logged_full = _logged(part / "metrics.jsonl"), _logged(full / "metrics.jsonl")
    # The update path is a name (replay for the first minibatch, tree after the weights move).
    seams = [pop_seams(logged) for logged in (logged_part, logged_full)]
    assert seams[0] == seams[1]
    assert {s["update/path"] for s in seams[0]} <= {"replay+tree", "tree", "none"}
    assert logged_part == [pytest.approx(m, rel=1e-6, abs=1e-9) for m in logged_full]
    assert (part / "rollouts.jsonl").read_text() == (full / "rollouts.jsonl").read_text()
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (full, part))
    assert sa["eval"] == sb["eval"]


def test_resume_without_checkpoint_is_refused(tmp_path):
    with pytest.raises(run_module.ResumeError, match="no complete checkpoint"):
        train(tiny_config("steps=1"), tmp_path / "empty", resume=True)


def test_extending_a_finished_run_matches_a_run_planned_that_long(tmp_path, capsys):
    from rlvr.cli.main import main

    settings = ["checkpoint_every=2", "keep_checkpoints=0", "algorithm.minibatches=2"]
    full = tmp_path / "full"
    train(tiny_config("steps=4", *settings), full)
    part = tmp_path / "part"
    train(tiny_config("steps=2", *settings), part)
    # finished: a plain resume has nothing to do and says how to extend
    assert main(["train", "--quiet", "--resume", str(part)]) == 2
    assert "already finished its 2 steps; extend it with steps=N" in capsys.readouterr().err

    assert main(["train", "--quiet", "--resume", str(part), "steps=4"]) == 0

    a = load_file(full / "checkpoints/step-000004/model.safetensors")
    b = load_file(part / "checkpoints/step-000004/model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    logged_part, logged_full = _logged(part / "metrics.jsonl"), _logged(full / "metrics.jsonl")
    assert [m["step"] for m in logged_part] == [1, 2, 3, 4]
    assert pop_seams(logged_part) == pop_seams(logged_full)
    assert logged_part == [pytest.approx(m, rel=1e-6, abs=1e-9) for m in logged_full]
    assert (part / "rollouts.jsonl").read_text() == (full / "rollouts.jsonl").read_text()
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (full, part))
    assert sa["eval"] == sb["eval"] and sb["steps"] == 4
    # config.yaml records the new length, so a later plain --resume continues to it
    assert load_config(TrainConfig, part / "config.yaml") == tiny_config("steps=4", *settings)


@pytest.fixture
def saved_run(tmp_path):
    from rlvr.config import save_config

    run = tmp_path / "run"
    run.mkdir()
    save_config(tiny_config("steps=3"), run / "config.yaml")
    return run


@pytest.mark.parametrize("overrides,named", [
    (["optim.lr=1e-3"], "optim.lr"),
    (["steps=9", "seed=1", "model.path=/m"], "seed, model.path"),
    (["algorithm={advantage: rloo}"], "algorithm"),
    (["data.path=x.jsonl"], "data.path"),
    (["sampling.max_new_tokens=99"], "sampling.max_new_tokens"),
])
def test_resume_refuses_overrides_that_change_what_is_trained(saved_run, overrides, named):
    with pytest.raises(ConfigError, match=f"{named} would change what was trained"):
        resume_config(saved_run, overrides)


def test_resume_allows_length_and_cadence(saved_run):
    cfg = resume_config(saved_run, ["steps=9", "checkpoint_every=1", "eval_every=3",
                                    "keep_checkpoints=0", "log_rollouts=false",
                                    "audit_every=0", "reward.workers=2"])
    assert (cfg.steps, cfg.checkpoint_every, cfg.eval.every, cfg.reward.workers) == (9, 1, 3, 2)
    assert cfg.optim == tiny_config().optim  # the rest is the run's own


def test_a_decaying_schedule_cannot_change_its_length(tmp_path):
    from rlvr.config import save_config

    run = tmp_path / "run"
    run.mkdir()
    save_config(tiny_config("steps=3", "optim.schedule=cosine"), run / "config.yaml")
    with pytest.raises(ConfigError, match="steps: optim.schedule=cosine decays"):
        resume_config(run, ["steps=6"])
    assert resume_config(run, ["checkpoint_every=1"]).steps == 3


def test_resume_below_the_checkpoint_is_refused(tmp_path):
    cfg = tiny_config("steps=2", "checkpoint_every=0")
    train(cfg, tmp_path / "run")
    with pytest.raises(run_module.ResumeError, match="past steps=1"):
        train(tiny_config("steps=1"), tmp_path / "run", resume=True)


def test_cli_resume_names_the_refused_override(tmp_path, capsys):
    from rlvr.cli.main import main
    from rlvr.config import save_config

    save_config(tiny_config("steps=3"), tmp_path / "config.yaml")
    assert main(["train", "--resume", str(tmp_path), "optim.lr=1"]) == 2
    assert "config error: optim.lr: a resumed run may change only steps" in \
        capsys.readouterr().err


def test_train_itself_refuses_a_changed_config_on_resume(tmp_path):
    # The Python API checks the values too, not only the CLI's override names.
    train(tiny_config("steps=1", "checkpoint_every=0"), tmp_path / "run")
    with pytest.raises(ConfigError, match="seed, optim.lr would change what was trained"):
        train(tiny_config("steps=2", "optim.lr=0.5", "seed=3"), tmp_path / "run", resume=True)
