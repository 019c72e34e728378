"""KL estimators k1/k2/k3 and the in-reward helpers, by hand."""

import math

import pytest
import torch

from rlvr.algorithms import (KL_ESTIMATORS, kl_k1, kl_k2, kl_k3, kl_reward_per_sequence,
                             kl_reward_to_go, masked_whiten)

LN2 = math.log(2)
# token 0: p = 0.5, p_ref = 0.25; token 1: p = 0.25, p_ref = 0.5; token 2: equal
LOGP = torch.tensor([[math.log(0.5), math.log(0.25), math.log(0.3)]], dtype=torch.float64)
REF = torch.tensor([[math.log(0.25), math.log(0.5), math.log(0.3)]], dtype=torch.float64)


def test_k1():
    # logp - logp_ref = ln .5 - ln .25 = ln 2 ; then -ln 2 ; 0
    torch.testing.assert_close(kl_k1(LOGP, REF),
                               torch.tensor([[LN2, -LN2, 0.0]], dtype=torch.float64))


def test_k2():
    # 0.5 * (ln 2)^2 = 0.240227 for both signs; 0
    v = 0.5 * LN2 ** 2
    torch.testing.assert_close(kl_k2(LOGP, REF), torch.tensor([[v, v, 0.0]], dtype=torch.float64))


def test_k3():
    # log_r = logp_ref - logp. token 0: log_r = -ln 2 -> e^-ln2 + ln 2 - 1 = 0.5 + .693147 - 1
    # token 1: log_r = ln 2 -> 2 - ln 2 - 1 = 0.306853 ; token 2: 1 - 0 - 1 = 0
    expected = torch.tensor([[LN2 - 0.5, 1 - LN2, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(kl_k3(LOGP, REF), expected)


def test_k3_gradient():
    # d k3 / d logp = -exp(logp_ref - logp) + 1 -> token 0: 1 - 0.5 = 0.5; token 1: 1 - 2 = -1
    logp = LOGP.clone().requires_grad_()
    kl_k3(logp, REF).sum().backward()
    torch.testing.assert_close(logp.grad, torch.tensor([[0.5, -1.0, 0.0]], dtype=torch.float64))


def test_k1_and_k3_are_unbiased_for_exact_kl():
    # Independent check: over a whole categorical distribution, E_{x~p}[k(x)] must equal
    # KL(p || q) = sum p log(p / q) for the unbiased estimators k1 and k3; k2 >= 0 always.
    p = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    q = torch.tensor([0.2, 0.2, 0.6], dtype=torch.float64)
    exact = (p * (p / q).log()).sum()
    logp, logq = p.log()[None], q.log()[None]
    for k in (kl_k1, kl_k3):
        torch.testing.assert_close((p * k(logp, logq)[0]).sum(), exact)
    assert (kl_k2(logp, logq) >= 0).all()


def test_k3_does_not_overflow():
    out = kl_k3(torch.tensor([[-200.0]]), torch.tensor([[0.0]]))
    assert torch.isfinite(out).all()


def test_kl_reward_per_sequence():
    # beta 0.5: row 0 valid [0.1, 0.2] -> 0.15 ; row 1 [0.4, 0.5, 0.6] -> 0.75
    kl = torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]], requires_grad=True)
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    out = kl_reward_per_sequence(kl, mask, beta=0.5)
    torch.testing.assert_close(out, torch.tensor([0.15, 0.75]))
    assert not out.requires_grad  # a reward carries no gradient


def test_kl_reward_to_go():
    # row 0: 0.5 * [0.1 + 0.2, 0.2, -] = [0.15, 0.1, 0]; row 1: 0.5 * [1.5, 1.1, 0.6]
    kl = torch.tensor([[0.1, 0.2, 0.3], [0.4, 0.5, 0.6]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    torch.testing.assert_close(kl_reward_to_go(kl, mask, beta=0.5),
                               torch.tensor([[0.15, 0.1, 0.0], [0.75, 0.55, 0.3]]))


def test_masked_whiten():
    # valid [1, 2, 3, 4]: mean 2.5, unbiased var (2.25 + .25 + .25 + 2.25) / 3 = 5/3
    # std 1.290994 -> [-1.161895, -0.387298, 0.387298, 1.161895]; padding -> 0
    values = torch.tensor([[1.0, 2.0, 3.0], [4.0, 100.0, 100.0]], dtype=torch.float64)
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    s = math.sqrt(5 / 3)
    expected = torch.tensor([[-1.5 / s, -0.5 / s, 0.5 / s], [1.5 / s, 0.0, 0.0]],
                            dtype=torch.float64)
    torch.testing.assert_close(masked_whiten(values, mask, eps=0.0), expected)
    assert torch.equal(masked_whiten(torch.ones(2, 2), torch.ones(2, 2)), torch.zeros(2, 2))


def test_shape_mismatch():
    with pytest.raises(ValueError, match="same shape"):
        kl_k1(torch.zeros(2, 3), torch.zeros(2, 4))


def test_registry_names():
    assert KL_ESTIMATORS == {"k1": kl_k1, "k2": kl_k2, "k3": kl_k3}
