"""KL-Cov (Cui et al. 2025) against hand-computed covariances, selections, losses and
gradients.

Old log-probs are 0 and log-probs are log(ratio), so each token's ratio is chosen
directly; d(-r A)/d logp = -r A, and a selected token adds beta * sign(logp - logp_old).
"""

import math

import pytest
import torch

from rlvr.algorithms import (POLICY_LOSSES, KLCov, centred_covariance, policy_loss,
                             top_covariance)
from rlvr.algorithms.loss_terms import rows_with_signal

F64 = torch.float64


def test_centred_covariance_by_hand():
    # valid tokens: row 0 all three, row 1 the first two (its last is padding)
    logp = torch.tensor([[-1.0, -2.0, -3.0], [-0.5, -1.5, 99.0]], dtype=F64)
    adv = torch.tensor([[1.0], [-1.0]], dtype=F64)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]], dtype=F64)
    # mean logp = (-1 -2 -3 -0.5 -1.5) / 5 = -1.6; mean A = (1+1+1-1-1) / 5 = 0.2
    # cov = (logp + 1.6) * (A - 0.2): row 0 (x 0.8), row 1 (x -1.2), padding 0
    expected = [[0.6 * 0.8, -0.4 * 0.8, -1.4 * 0.8], [1.1 * -1.2, 0.1 * -1.2, 0.0]]
    torch.testing.assert_close(centred_covariance(logp, adv, mask),
                               torch.tensor(expected, dtype=F64))


def test_top_covariance_picks_the_largest_valid_tokens():
    cov = torch.tensor([[0.48, -0.32, -1.12], [-1.32, -0.12, 5.0]], dtype=F64)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]], dtype=F64)
    # N = 5 valid; ratio 0.45 -> k = floor(2.25) = 2: 0.48 and -0.12 (5.0 is padding)
    chosen = top_covariance(cov, mask, 0.45)
    assert chosen.tolist() == [[True, False, False], [False, True, False]]
    # a ratio too small for one token still penalises one (k = max(1, floor(0.005)))
    assert top_covariance(cov, mask, 1e-3).sum() == 1
    assert top_covariance(cov, torch.zeros_like(mask), 0.5).sum() == 0


def test_kl_cov_loss_and_gradient_by_hand():
    ratios = torch.tensor([[1.2, 0.5, 1.0, 2.0]], dtype=F64)
    logp = ratios.log().requires_grad_()
    old = torch.zeros_like(ratios)
    mask = torch.ones_like(ratios)
    adv = torch.tensor([[1.0, 1.0, -1.0, -1.0]], dtype=F64)  # per-token advantages
    out = KLCov(ratio=0.5, beta=0.1)(logp, old, adv, mask)
    # logp = [log 1.2, log 0.5, 0, log 2] = [0.1823, -0.6931, 0, 0.6931], mean 0.0456;
    # A mean 0. cov = (logp - 0.0456) * A = [0.1368, -0.7387, 0.0456, -0.6476]
    # -> k = floor(0.5 * 4) = 2: tokens 0 (0.1368) and 2 (0.0456) carry the penalty
    l0, l1, l2, l3 = math.log(1.2), math.log(0.5), 0.0, math.log(2.0)
    expected = [[-1.2 + 0.1 * abs(l0), -0.5, 1.0 + 0.1 * abs(l2), 2.0]]
    torch.testing.assert_close(out.loss, torch.tensor(expected, dtype=F64))
    out.loss.sum().backward()
    # d/dlogp: -r A, plus beta * sign(logp) on a selected token (sign(0) = 0)
    torch.testing.assert_close(logp.grad, torch.tensor([[-1.2 + 0.1, -0.5, 1.0, 2.0]],
                                                       dtype=F64))
    assert out.stats["kl_cov_frac"].item() == pytest.approx(0.5)
    assert out.stats["ratio_max"].item() == pytest.approx(2.0)
    assert out.stats["ratio_mean"].item() == pytest.approx((1.2 + 0.5 + 1.0 + 2.0) / 4)
    k3 = [r - 1 - math.log(r) for r in (1.2, 0.5, 1.0, 2.0)]
    assert out.stats["approx_kl"].item() == pytest.approx(sum(k3) / 4)
    assert l1 < 0 < l3  # (the unselected tokens' log-ratios, for the record)


def test_masked_tokens_take_no_part():
    logp = torch.tensor([[0.0, float("-inf")]], dtype=F64, requires_grad=True)
    out = KLCov(ratio=1.0)(logp, torch.zeros(1, 2, dtype=F64), torch.tensor([2.0], dtype=F64),
                           torch.tensor([[1.0, 0.0]], dtype=F64))
    assert out.loss.tolist() == [[-2.0, 0.0]]
    out.loss.sum().backward()
    assert logp.grad.tolist() == [[-2.0, 0.0]]


def test_registered_with_options_and_refuses_bad_ones():
    assert POLICY_LOSSES["kl_cov"] is KLCov
    assert policy_loss("kl_cov", ratio=2e-4) == KLCov(ratio=2e-4, beta=1.0)
    with pytest.raises(ValueError, match="ratio must be in"):
        policy_loss("kl_cov", ratio=0)
    with pytest.raises(ValueError, match="beta must be >= 0"):
        policy_loss("kl_cov", beta=-1)


def test_zero_advantage_rows_are_kept_for_it():
    mask = torch.ones(2, 3)
    adv = torch.tensor([0.0, 1.0])
    assert rows_with_signal([KLCov()], mask, adv).tolist() == [0, 1]
    assert rows_with_signal([policy_loss("ppo_clip")], mask, adv).tolist() == [1]
