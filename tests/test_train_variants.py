"""The loop's algorithm switches run end to end on a tiny model: KL (loss / reward), no
reference model at beta = 0, DAPO dynamic sampling, soft overlong penalty, GSPO,
several epochs x minibatches."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import torch

import rlvr.training.run as run_module
from rlvr.training.run import train
from train_helpers import tiny_config


@pytest.fixture
def length_reward(monkeypatch):
    """A reward that differs within groups even for an untrained model (workers import
    it by path, so the tests dir goes on their PYTHONPATH)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent),
                                                      os.environ.get("PYTHONPATH", "")]))
    return ("reward.plugins=[train_helpers:LengthVerifier]",
            "reward.verifier=train_helpers:LengthVerifier")


def metrics(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_no_reference_model_at_beta_zero(tmp_path, monkeypatch):
    built = []
    real = run_module._reference_model
    monkeypatch.setattr(run_module, "_reference_model",
                        lambda *a: built.append(real(*a)) or built[-1])
    train(tiny_config("steps=1", "sft.steps=0", "algorithm.kl_beta=0"), tmp_path / "r")
    assert built == [None]
    assert not (tmp_path / "r" / "reference").exists()
    assert "kl" not in metrics(tmp_path / "r")[0]


@pytest.mark.parametrize("extra", [
    ["algorithm.kl_beta=0.1", "algorithm.kl_in=loss", "algorithm.kl_estimator=k3",
     "algorithm.entropy_coef=0.01"],
    ["algorithm.kl_beta=0.1", "algorithm.kl_in=reward", "algorithm.kl_estimator=k1",
     "algorithm.policy_loss=gspo",
     "algorithm.advantage=rloo", "reward.overlong=soft", "reward.overlong_buffer=2",
     "algorithm.epochs=2", "algorithm.minibatches=2", "algorithm.recompute_old_logprobs=true"],
])
def test_kl_and_variants_run(tmp_path, extra, length_reward):
    summary = train(tiny_config("steps=2", "sft.steps=0", *length_reward, *extra),
                    tmp_path / "r")
    lines = metrics(tmp_path / "r")
    assert [m["step"] for m in lines] == [1, 2]
    assert (tmp_path / "r" / "reference" / "config.json").exists()
    if "algorithm.minibatches=2" in extra:
        # The logged KL is the mean over the step's optimizer steps: with 2 epochs x 2
        # minibatches the policy has already moved when the later ones are scored, and
        # k1 can be negative, so only "finite, and nonzero once updated" holds.
        assert all(math.isfinite(m["kl"]) for m in lines) and lines[1]["kl"] != 0
    else:
        # one optimizer step per RL step: step 1 is scored at the reference itself, so
        # its KL (k3 >= 0) is ~0, and it grows after the update
        assert lines[0]["kl"] == pytest.approx(0.0, abs=1e-3) and lines[1]["kl"] > 0
    assert summary["steps"] == 2


def test_dynamic_sampling_keeps_only_informative_groups(tmp_path, length_reward):
    train(tiny_config("steps=2", "sft.steps=0", "algorithm.dynamic_sampling=true",
                      "algorithm.max_draws=3", *length_reward), tmp_path / "r")
    for m in metrics(tmp_path / "r"):
        assert 1 <= m["dynamic/draws"] <= 3
        assert m["dynamic/groups_kept"] <= 4
        if m["dynamic/groups_kept"] == 4:  # a full batch holds no uniform group
            assert m["groups_uniform"] == 0.0


def test_overlong_mask_leaves_nothing_to_learn_from_truncated_attempts(tmp_path, length_reward):
    # 2 new tokens, always the most likely one (top_k=1): this untrained model's most
    # likely tokens are never EOS, so every attempt is cut (whatever the sampler's draws).
    train(tiny_config("steps=1", "sft.steps=0", "sampling.max_new_tokens=2",
                      "sampling.top_k=1", "reward.overlong=mask", *length_reward),
          tmp_path / "r")
    m = metrics(tmp_path / "r")[0]
    assert m["truncation_rate"] == 1.0 and m["reward/std"] > 0
    assert m["grad_norm"] == 0.0


def test_composite_reward_logs_each_component(tmp_path, length_reward):
    options = ('reward.options={components: [{verifier: exact, name: exact}, '
               '{verifier: "train_helpers:LengthVerifier", name: length}]}')
    train(tiny_config("steps=1", "sft.steps=0", length_reward[0], "reward.verifier=composite",
                      options),
          tmp_path / "r")
    m = metrics(tmp_path / "r")[0]
    assert m["reward/exact"] == 0.0  # an untrained model never gets a sum right
    assert 0 < m["reward/length"] <= 1
    # the composite's score is the mean of its two components
    assert m["reward/mean"] == pytest.approx((m["reward/exact"] + m["reward/length"]) / 2)


def _final_weights(run_dir):
    from safetensors.torch import load_file

    final = sorted((run_dir / "checkpoints").glob("step-*"))[-1]
    return load_file(str(final / "model.safetensors"))


@pytest.mark.parametrize("reward", ["train_helpers:LengthVerifier", "exact"])
def test_skipping_zero_advantage_rows_changes_nothing_but_work(tmp_path, reward,
                                                               length_reward):
    """The update on only the rows with a nonzero advantage ends at the same weights as the
    update on every row: with the length reward some groups are uniform and some are not;
    with "exact" an untrained model gets every sum wrong, so no row has a signal and
    AdamW steps on a zero gradient."""
    common = ("steps=2", "sft.steps=0", length_reward[0], f"reward.verifier={reward}",
              "sampling.group_size=4")
    train(tiny_config(*common), tmp_path / "skip")
    train(tiny_config(*common, "algorithm.skip_zero_advantage=false"), tmp_path / "all")
    skipped, full = metrics(tmp_path / "skip"), metrics(tmp_path / "all")
    rows = 4 * 4  # prompts_per_step x group_size
    assert all(m["rows_trained"] == rows for m in full)
    if reward == "exact":
        assert all(m["rows_trained"] == 0 for m in skipped)
    else:
        assert 0 < skipped[0]["rows_trained"] < rows
    for a, b in zip(skipped, full):
        assert a["reward/mean"] == b["reward/mean"]  # the same samples both times
        assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-5, abs=1e-7)
    weights_skip, weights_full = _final_weights(tmp_path / "skip"), _final_weights(tmp_path / "all")
    assert weights_skip.keys() == weights_full.keys()
    for name, value in weights_skip.items():
        torch.testing.assert_close(value, weights_full[name], rtol=1e-5, atol=1e-6)
