"""The trainer with a sampler whose log-probs are not its own: mismatch metrics every
step, `algorithm.rollout_correction` (auto, tis, mis) applied to the policy loss, and
the field checked when the config loads.

The fake engine is the HF engine with every reported log-prob lowered by log 2, so
pi_old / pi_sampler is exactly 2 on every token (up to the float32 difference between
the decode's and the update's forward): mismatch/abs_dlogprob = log 2, mismatch/kl =
2 - 1 - log 2, and a truncation at 1.5 weighs every token's loss by 1.5."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from rlvr.config import ConfigError
from rlvr.rollout import factory
from rlvr.rollout.base import EngineCapabilities
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.training.run import train
from train_helpers import plugin_reward, tiny_config

LN2 = math.log(2.0)
MISMATCH = ("mismatch/kl", "mismatch/abs_dlogprob", "mismatch/ratio_min",
            "mismatch/ratio_mean", "mismatch/ratio_max")
CORRECTION = ("correction/clipped_frac", "correction/weight_mean")
TOL = 1e-4  # the decode's forward vs the update's, in float32


class HalvedEngine(HFRolloutEngine):
    """Samples as the HF engine does but reports log-probs log 2 lower (pi_sampler half
    the trainer's), declaring them not the trainer's numbers, as vLLM's are not."""

    CAPABILITIES = EngineCapabilities(keeps_activations=False, logprobs_match_trainer=False)

    @property
    def capabilities(self) -> EngineCapabilities:
        return self.CAPABILITIES

    def generate_ids(self, prompt_ids, n, params):  # `generate` comes here too
        groups = super().generate_ids(prompt_ids, n, params)
        for group in groups:
            for c in group:
                c.logprobs = [x - LN2 for x in c.logprobs]
        return groups


@pytest.fixture
def halved(monkeypatch):
    monkeypatch.setitem(factory.ENGINES, "halved", f"{__name__}:HalvedEngine")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent),
                                                      os.environ.get("PYTHONPATH", "")]))
    return "sampling.engine=halved"


def _first_step(tmp_path: Path, name: str, *overrides: str) -> dict:
    """Step 1's metrics of a one-step run: no warm-start, one minibatch, a reward that
    differs within groups (so rows have a gradient), the same samples in every run."""
    train(tiny_config("steps=1", "sft.steps=0", "sampling.group_size=4",
                      *plugin_reward("train_helpers:LengthVerifier"), *overrides),
          tmp_path / name)
    return json.loads((tmp_path / name / "metrics.jsonl").read_text().splitlines()[0])


def test_mismatch_is_logged_and_each_correction_weighs_the_policy_loss(tmp_path, halved):
    none = _first_step(tmp_path, "none", halved, "algorithm.rollout_correction=none")
    assert none["rows_trained"] > 0 and none["grad_norm"] > 0
    # pi_old was recomputed: the PPO ratio is 1, the sampler is measured at ratio 2
    assert none["ratio_max"] == pytest.approx(1.0, abs=1e-5)
    assert none["mismatch/abs_dlogprob"] == pytest.approx(LN2, abs=TOL)
    assert none["mismatch/kl"] == pytest.approx(1 - LN2, abs=TOL)
    for key in ("mismatch/ratio_min", "mismatch/ratio_mean", "mismatch/ratio_max"):
        assert none[key] == pytest.approx(2.0, abs=TOL), key
    assert not any(key in none for key in CORRECTION)

    # tis at 1.5: every token's ratio 2 is truncated to 1.5, so the loss and its
    # gradient (before clipping) are 1.5 times the uncorrected ones
    tis = _first_step(tmp_path, "tis", halved, "algorithm.rollout_correction="
                      "{name: tis, threshold: 1.5}")
    assert tis["correction/clipped_frac"] == 1.0
    assert tis["correction/weight_mean"] == pytest.approx(1.5)
    assert tis["policy_loss"] == pytest.approx(1.5 * none["policy_loss"], rel=1e-4)
    assert tis["grad_norm"] == pytest.approx(1.5 * none["grad_norm"], rel=1e-4)
    assert {key: tis[key] for key in MISMATCH} == {key: none[key] for key in MISMATCH}

    # mis with upper 1.5: every token is outside [0.5, 1.5], so nothing is learnt
    mis = _first_step(tmp_path, "mis", halved, "algorithm.rollout_correction="
                      "{name: mis, upper: 1.5}")
    assert mis["correction/clipped_frac"] == 1.0 and mis["correction/weight_mean"] == 0.0
    assert mis["rows_trained"] == none["rows_trained"]
    assert mis["policy_loss"] == 0.0 and mis["grad_norm"] == 0.0


def test_auto_is_tis_at_2_for_such_an_engine(tmp_path, halved):
    none = _first_step(tmp_path, "none", halved, "algorithm.rollout_correction=none")
    auto = _first_step(tmp_path, "auto", halved)  # the default
    assert auto["correction/weight_mean"] == pytest.approx(2.0, abs=2 * TOL)
    assert auto["policy_loss"] == pytest.approx(2.0 * none["policy_loss"], rel=1e-3)


def test_auto_is_none_for_the_hf_engine_and_a_correction_there_measures_zero(tmp_path):
    plain = _first_step(tmp_path, "plain")
    assert not any(key in plain for key in (*MISMATCH, *CORRECTION))
    # a correction recomputes pi_old; the HF engine's log-probs are the trainer's
    tis = _first_step(tmp_path, "tis", "algorithm.rollout_correction=tis")
    assert tis["mismatch/abs_dlogprob"] == pytest.approx(0.0, abs=TOL)
    assert tis["mismatch/kl"] == pytest.approx(0.0, abs=TOL)
    assert tis["mismatch/ratio_max"] == pytest.approx(1.0, abs=TOL)
    assert tis["correction/clipped_frac"] == 0.0
    assert tis["correction/weight_mean"] == pytest.approx(1.0, abs=TOL)


@pytest.mark.parametrize("value, message", [
    ("{name: tis, threshold: 0}", "threshold must be > 0, got 0"),
    ("{name: mis, lower: 2.0, upper: 1.0}", "need 0 <= lower < upper"),
    ("tiss", "unknown rollout correction 'tiss'; known: auto, mis, none, seq_mis, "
             "seq_tis, tis"),
    ("{name: auto, threshold: 1.5}", "'auto' takes no options"),
    ("{name: mis, threshold: 1.5}", "has no option(s) threshold"),
])
def test_bad_values_fail_on_load_naming_the_field(value, message):
    with pytest.raises(ConfigError) as raised:
        tiny_config(f"algorithm.rollout_correction={value}")
    assert str(raised.value).startswith("algorithm.rollout_correction: ")
    assert message in str(raised.value)


def test_a_correction_needs_pi_old_recomputed():
    tiny_config("algorithm.rollout_correction=tis")  # null: recomputed
    with pytest.raises(ConfigError, match=r"algorithm\.rollout_correction: .* recomputed"):
        tiny_config("algorithm.rollout_correction=tis",
                    "algorithm.recompute_old_logprobs=false")
    # auto and none need nothing recomputed for an engine with the trainer's numbers
    tiny_config("algorithm.recompute_old_logprobs=false")
    tiny_config("algorithm.rollout_correction=none", "algorithm.recompute_old_logprobs=false")
    # an option alone refines the configured name
    cfg = tiny_config("algorithm.rollout_correction=tis",
                      "algorithm.rollout_correction.threshold=1.5")
    assert cfg.algorithm.rollout_correction.options == {"threshold": 1.5}


def test_weights_follow_their_rows_through_micro_batches():
    """Weight 1 on even rows and 0 on odd rows, run in micro-batches of 3 rows (which
    mix both), gives exactly the gradient of the even rows alone without weights, the
    whole minibatch's normaliser in both: each piece got its own rows' weights."""
    import torch

    from rlvr.training.algorithm import build_algorithm
    from rlvr.training.loop import accumulate_gradients
    from rlvr.update_paths.paths import UpdatePath
    from train_helpers import eight_sampled_rows

    model, batch = eight_sampled_rows()
    mask = batch.mask.float()
    advantages = torch.tensor([1.0, -0.5, 0.7, 2.0, -1.0, 0.3, -0.2, 0.9])
    even = torch.arange(0, 8, 2)
    weights = torch.zeros_like(mask)
    weights[even] = 1.0

    def grads(micro: str, rows, is_weights):
        cfg = tiny_config(micro)
        t = SimpleNamespace(cfg=cfg, model=model, update=UpdatePath(),
                            algo=build_algorithm(cfg.algorithm, cfg.sampling.max_new_tokens))
        model.zero_grad(set_to_none=True)
        stats = accumulate_gradients(t, rows, batch, mask, t.algo.aggregate.normalizer(mask),
                                     advantages, batch.old_logprobs, None, is_weights)
        return stats, {n: p.grad.clone() for n, p in model.named_parameters()}

    weighted_stats, weighted = grads("algorithm.micro_batch_rows=3", torch.arange(8), weights)
    alone_stats, alone = grads("algorithm.micro_batch_rows=0", even, None)
    assert weighted_stats["policy_loss"] == pytest.approx(alone_stats["policy_loss"], rel=1e-5)
    assert alone_stats["policy_loss"] != 0
    for name, grad in alone.items():
        torch.testing.assert_close(weighted[name], grad, rtol=1e-5, atol=1e-7)
