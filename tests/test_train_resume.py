"""A run interrupted after a checkpoint and resumed ends exactly where an uninterrupted
run ends: same parameters, same metrics, same rollouts (CPU, fixed seeds)."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import load_file

import rlvr.training.run as run_module
from rlvr.training.run import train
from train_helpers import tiny_config

TIMING = ("time/", "tokens_per_s")


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
    paths = [[m.pop("update/path") for m in logged] for logged in (logged_part, logged_full)]
    assert paths[0] == paths[1] and set(paths[0]) <= {"replay+tree", "tree", "none"}
    assert logged_part == [pytest.approx(m, rel=1e-6, abs=1e-9) for m in logged_full]
    assert (part / "rollouts.jsonl").read_text() == (full / "rollouts.jsonl").read_text()
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (full, part))
    assert sa["eval"] == sb["eval"]


def test_resume_without_checkpoint_is_refused(tmp_path):
    with pytest.raises(run_module.ResumeError, match="no complete checkpoint"):
        train(tiny_config("steps=1"), tmp_path / "empty", resume=True)
