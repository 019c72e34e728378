"""`algorithm.old_logprobs_from_update`: pi_old read off the update's own forward instead
of a forward before the update (rlvr.training.old_policy). With one optimizer step per
batch both are the same weights, so the loss, the gradient, the correction's weights and
the mismatch metrics are the recompute's; the metrics then cover the rows the update
ran. Refused where the two differ (several optimizer steps, the KL in the reward)."""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import load_file

from rlvr.algorithms import mismatch_stats, rollout_correction, token_logprobs_and_entropy
from rlvr.config import ConfigError
from rlvr.training.algorithm import build_algorithm
from rlvr.training.loop import accumulate_gradients
from rlvr.training.old_policy import FromUpdateForward
from rlvr.training.run import train
from rlvr.update_paths.paths import UpdatePath
from test_train_rollout_correction import halved  # noqa: F401  (a fixture)
from train_helpers import eight_sampled_rows, plugin_reward, tiny_config

LN2 = math.log(2.0)
# Every line of both runs, compared: the loss, its gradient and the correction's and
# mismatch's statistics (these as measured over the rows the update ran: all of them here)
COMPARED = ("policy_loss", "grad_norm", "rows_trained", "ratio_max", "clip_frac",
            "mismatch/kl", "mismatch/abs_dlogprob", "mismatch/ratio_min",
            "mismatch/ratio_mean", "mismatch/ratio_max", "correction/clipped_frac",
            "correction/weight_mean")


def _lines(tmp_path, name: str, *overrides: str) -> list[dict]:
    """Three steps of the halved sampler (pi_sampler = pi_trainer / 2) with tis at 1.5,
    the same samples in every run while the weights agree; every row trained."""
    run = tmp_path / name
    train(tiny_config("steps=3", "sft.steps=0", "sampling.group_size=4",
                      "algorithm.skip_zero_advantage=false",
                      "algorithm.rollout_correction={name: tis, threshold: 1.5}",
                      *plugin_reward("train_helpers:LengthVerifier"), *overrides), run)
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def test_a_run_takes_the_same_steps_with_one_forward_less(tmp_path, halved):  # noqa: F811
    forward = _lines(tmp_path, "forward", halved)
    fused = _lines(tmp_path, "fused", halved, "algorithm.old_logprobs_from_update=true")
    assert [m["update/pi_old"] for m in forward] == ["forward"] * 3
    assert [m["update/pi_old"] for m in fused] == ["update_forward"] * 3
    assert forward[0]["rows_trained"] > 0 and forward[0]["grad_norm"] > 0
    assert fused[0]["correction/clipped_frac"] == 1.0  # every token's ratio 2 truncated
    assert fused[0]["mismatch/abs_dlogprob"] == pytest.approx(LN2, abs=1e-4)
    for a, b in zip(forward, fused):
        for key in COMPARED:
            assert b[key] == pytest.approx(a[key], rel=1e-4, abs=1e-6), (a["step"], key)
    # the weights after three updates are the same (to float32 rounding)
    a, b = (load_file(tmp_path / name / "checkpoints/step-000003/model.safetensors")
            for name in ("forward", "fused"))
    for key in a:
        torch.testing.assert_close(b[key], a[key], rtol=1e-4, atol=1e-6)


@pytest.fixture(scope="module")
def sampled():
    """Eight sampled rows of a small model; the sampler's log-probs are the trainer's
    lowered by log 2 on even rows and by log 4 on odd rows."""
    model, batch = eight_sampled_rows()
    with torch.no_grad():
        trainer, _ = token_logprobs_and_entropy(UpdatePath().logits(model, batch),
                                                batch.completion_ids)  # [B, T]
    lowered = torch.tensor([LN2 if row % 2 == 0 else 2 * LN2 for row in range(8)])[:, None]
    batch.old_logprobs = torch.where(batch.mask.bool(), trainer - lowered,
                                     torch.zeros_like(trainer))
    return model, batch, trainer


def _gradients(model, batch, rows, micro: str, old_logprobs, is_weights):
    cfg = tiny_config(micro)
    t = SimpleNamespace(cfg=cfg, model=model, update=UpdatePath(),
                        algo=build_algorithm(cfg.algorithm, cfg.sampling.max_new_tokens))
    mask = batch.mask.float()
    advantages = torch.tensor([1.0, -0.5, 0.7, 2.0, -1.0, 0.3, -0.2, 0.9])
    model.zero_grad(set_to_none=True)
    stats = accumulate_gradients(t, rows, batch, mask, t.algo.aggregate.normalizer(mask),
                                 advantages, old_logprobs, None, is_weights)
    return stats, {n: p.grad.clone() for n, p in model.named_parameters()}


def test_each_micro_batch_resolves_its_own_rows(sampled):
    """Micro-batches of 3 over the even rows only: the gradient and the loss are the
    recompute's (pi_old and tis weights computed before the update, by hand), the
    recorded pi_old is the trainer's on exactly the rows that ran, and the metrics
    cover only those rows (mismatch ratio 2, not the odd rows' 4)."""
    model, batch, trainer = sampled
    mask = batch.mask.float()
    tis = rollout_correction("tis", threshold=3.0)
    even = torch.arange(0, 8, 2)
    weights = tis(trainer, batch.old_logprobs, mask).weights  # [B, T] 2 on the valid tokens
    plain_stats, plain = _gradients(model, batch, even, "algorithm.micro_batch_rows=3",
                                    trainer, weights)
    pi_old = FromUpdateForward.over(batch.old_logprobs, tis)
    fused_stats, fused = _gradients(model, batch, even, "algorithm.micro_batch_rows=3",
                                    pi_old, None)
    assert plain_stats["policy_loss"] != 0
    assert fused_stats["policy_loss"] == pytest.approx(plain_stats["policy_loss"], rel=1e-5)
    for name, grad in plain.items():
        torch.testing.assert_close(fused[name], grad, rtol=1e-5, atol=1e-7)
    assert pi_old.filled.ran.tolist() == [row % 2 == 0 for row in range(8)]
    valid = batch.mask.bool()
    torch.testing.assert_close(pi_old.filled.proximal[even][valid[even]],
                               trainer[even][valid[even]], rtol=1e-5, atol=1e-6)
    stats = pi_old.stats(mask)
    assert stats["mismatch/ratio_min"] == pytest.approx(2.0, rel=1e-4)
    assert stats["mismatch/ratio_max"] == pytest.approx(2.0, rel=1e-4)
    assert stats["mismatch/kl"] == pytest.approx(1 - LN2, abs=1e-4)
    assert stats["correction/weight_mean"] == pytest.approx(2.0, rel=1e-4)
    assert stats["correction/clipped_frac"] == 0.0
    # measured over every row, the odd rows' ratio 4 would show
    every = mismatch_stats(trainer, batch.old_logprobs, mask)
    assert every["mismatch/ratio_max"] == pytest.approx(4.0, rel=1e-4)


def test_no_row_ran_measures_nothing(sampled):
    _, batch, _ = sampled
    pi_old = FromUpdateForward.over(batch.old_logprobs, rollout_correction("tis"))
    assert pi_old.stats(batch.mask.float()) == {
        "mismatch/kl": 0.0, "mismatch/abs_dlogprob": 0.0, "mismatch/ratio_min": 1.0,
        "mismatch/ratio_mean": 1.0, "mismatch/ratio_max": 1.0,
        "correction/clipped_frac": 0.0, "correction/weight_mean": 1.0}


@pytest.mark.parametrize("overrides, field, words", [
    (["algorithm.epochs=2"], "algorithm.epochs", "one optimizer step per batch"),
    (["algorithm.minibatches=2"], "algorithm.minibatches", "got minibatches 2"),
    (["algorithm.kl_beta=0.1", "algorithm.kl_in=reward"], "algorithm.kl_in",
     "needs pi_old before the update"),
    (["algorithm.recompute_old_logprobs=false"], "algorithm.old_logprobs_from_update",
     "recompute_old_logprobs false turns off"),
])
def test_refused_where_the_update_forward_is_not_pi_old(overrides, field, words):
    tiny_config("algorithm.old_logprobs_from_update=true")  # alone: accepted
    with pytest.raises(ConfigError) as raised:
        tiny_config("algorithm.old_logprobs_from_update=true", *overrides)
    assert str(raised.value).startswith(f"{field}: ")
    assert words in str(raised.value)


def test_old_policy_runs_a_forward_only_without_the_option(sampled):
    """The plain path's pi_old is a forward of its own (counted); with the option,
    none runs before the update: pi_old waits for the update's forward."""
    from rlvr.rollout.base import EngineCapabilities
    from rlvr.training.old_policy import old_policy

    model, batch, trainer = sampled
    counted = []

    class Counting(UpdatePath):
        def logits(self, model, rows):
            counted.append(len(rows.input_ids))
            return super().logits(model, rows)

    def pi_old(*overrides):
        cfg = tiny_config("algorithm.rollout_correction=tis", *overrides)
        t = SimpleNamespace(cfg=cfg, model=model, update=Counting(), producer=None,
                            algo=build_algorithm(cfg.algorithm, cfg.sampling.max_new_tokens),
                            engine=SimpleNamespace(capabilities=EngineCapabilities(False, False)))
        return old_policy(t, batch, batch.mask.float())

    old, weights, metrics = pi_old()
    assert counted == [8] and metrics["mismatch/ratio_min"] == pytest.approx(2.0, rel=1e-4)
    torch.testing.assert_close(old, trainer)
    old, weights, metrics = pi_old("algorithm.old_logprobs_from_update=true")
    assert counted == [8]  # no second forward
    assert isinstance(old, FromUpdateForward) and weights is None and metrics == {}


@pytest.mark.slow
def test_an_asynchronous_run_takes_pi_old_from_its_update(tmp_path, monkeypatch):
    """K = 1 (decoupled PPO: pi_old is the proximal policy, tis on its gap to the
    producer's): every step records update/pi_old = update_forward with the correction's
    metrics, trains within the bound and moves the weights."""
    from async_helpers import tests_on_pythonpath

    monkeypatch.setenv("PYTHONPATH", tests_on_pythonpath())  # workers import the reward
    run = tmp_path / "k1"
    train(tiny_config("steps=4", "sft.steps=0", "data.eval_size=2", "rollout.max_staleness=1",
                      "algorithm.old_logprobs_from_update=true",
                      *plugin_reward("train_helpers:LengthVerifier")), run)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in rows] == [1, 2, 3, 4]
    for m in rows:
        assert m["update/pi_old"] == "update_forward" and m["staleness/max"] <= 1
        assert m["correction/weight_mean"] > 0 and m["mismatch/ratio_min"] > 0
    assert any(m["staleness/lag_1"] > 0 for m in rows[1:])  # stale groups were corrected
    assert any(m["mismatch/abs_dlogprob"] > 0 for m in rows[1:])
    first, last = (load_file(run / f"checkpoints/step-{s:06d}/model.safetensors") for s in (0, 4))
    assert not torch.equal(first["model.norm.weight"], last["model.norm.weight"])
