"""The update's objective (rlvr.algorithms.objective) by hand: the surrogate times the
importance weights, aggregated with the token weights, plus the further terms, and the
statistics the loop logs."""

import math

import pytest
import torch

from rlvr.algorithms import (EntropyBonus, KLPenalty, LossInputs, Objective, PPOClip,
                             kl_k3, loss_aggregation)

# Two rows: row 0 has 2 tokens, row 1 has 1 (its second position is padding).
MASK = torch.tensor([[1.0, 1.0], [1.0, 0.0]])  # [B, T]
OLD = torch.zeros(2, 2)  # [B, T] log pi_old = 0
ADVANTAGES = torch.tensor([1.0, -1.0])  # [B]
# log pi_theta: ratios e^0 = 1, e^log(1.5) = 1.5 (clipped at 1.2 for A > 0), e^log(0.5)
# = 0.5 (clipped at 0.8 for A < 0); padding holds a value the mask must ignore.
LOGPROBS = torch.tensor([[0.0, math.log(1.5)], [math.log(0.5), 7.0]])
ENTROPY = torch.tensor([[0.2, 0.4], [0.6, 9.0]])


def _inputs(**overrides):
    logprobs = LOGPROBS.clone().requires_grad_(True)
    fields = dict(logprobs=logprobs, entropy=ENTROPY, old_logprobs=OLD,
                  advantages=ADVANTAGES, mask=MASK,
                  weights=loss_aggregation("token_mean").weights(MASK))
    fields.update(overrides)
    return LossInputs(**fields)


def test_clipped_surrogate_token_mean_by_hand():
    # per token -min(r A, clip(r) A): row 0: -1, -min(1.5, 1.2) = -1.2; row 1 (A = -1):
    # -min(-0.5, -0.8) = 0.8. Token mean over 3 tokens: (-1 - 1.2 + 0.8) / 3.
    x = _inputs()
    out = Objective(PPOClip())(x)
    assert out.loss.item() == pytest.approx((-1 - 1.2 + 0.8) / 3)
    assert out.stats["policy_loss"] == pytest.approx(out.stats["loss"])
    assert out.stats["entropy"] == pytest.approx((0.2 + 0.4 + 0.6) / 3)
    assert out.stats["clip_frac"] == pytest.approx(2 / 3)
    assert "kl" not in out.stats  # no reference given
    out.loss.backward()
    # Only the unclipped token (row 0, t 0) passes gradient: d(-r A)/dlogp = -r A / 3.
    expected = torch.tensor([[-1 / 3, 0.0], [0.0, 0.0]])
    torch.testing.assert_close(x.logprobs.grad, expected)


def test_importance_weights_scale_each_tokens_surrogate():
    weights = torch.tensor([[2.0, 0.5], [0.25, 100.0]])  # [B, T]; padding's 100 unused
    out = Objective(PPOClip())(_inputs(is_weights=weights))
    assert out.loss.item() == pytest.approx((-1 * 2 - 1.2 * 0.5 + 0.8 * 0.25) / 3)


def test_sequence_mean_weights_each_row_equally():
    # row 0: mean(-1, -1.2) = -1.1; row 1: 0.8; then the mean over 2 rows.
    x = _inputs(weights=loss_aggregation("sequence_mean").weights(MASK))
    assert Objective(PPOClip())(x).loss.item() == pytest.approx((-1.1 + 0.8) / 2)


def test_terms_share_the_token_weights_and_kl_is_reported():
    ref = torch.tensor([[math.log(0.5), 0.0], [0.0, 0.0]])  # [B, T]
    objective = Objective(PPOClip(), (KLPenalty(0.1), EntropyBonus(0.01)), kl=kl_k3)
    out = objective(_inputs(ref_logprobs=ref))
    # k3(logp, ref) = e^(ref - logp) - (ref - logp) - 1 per token
    k3 = [math.exp(d) - d - 1 for d in (math.log(0.5), -math.log(1.5), -math.log(0.5))]
    surrogate = (-1 - 1.2 + 0.8) / 3
    expected = surrogate + 0.1 * sum(k3) / 3 - 0.01 * (0.2 + 0.4 + 0.6) / 3
    assert out.loss.item() == pytest.approx(expected)
    assert out.stats["policy_loss"] == pytest.approx(surrogate)
    assert out.stats["kl"] == pytest.approx(sum(k3) / 3)
    assert out.stats["loss"] == pytest.approx(expected)
