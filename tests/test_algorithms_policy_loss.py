"""PPO clip / dual clip / GSPO against hand-computed values and gradients.

Log-probs are built as log(ratio) with old log-probs 0, so each token's ratio is chosen
directly; d(-r A)/d logp = -r A for an unclipped token, 0 for a clipped one.
"""

import math

import pytest
import torch

from rlvr.algorithms import GSPO, PPOClip, SequenceMean, TokenMean, clipped_surrogate

D = 1e-6  # "just inside / just outside" a clip boundary (float64)


def run(loss_fn, ratios, advantages, mask=None):
    ratios = torch.tensor(ratios, dtype=torch.float64)
    logprobs = ratios.log().requires_grad_()
    old = torch.zeros_like(ratios)
    mask = torch.ones_like(ratios) if mask is None else torch.tensor(mask, dtype=torch.float64)
    out = loss_fn(logprobs, old, torch.tensor(advantages, dtype=torch.float64), mask)
    out.loss.sum().backward()
    return out, logprobs.grad


def test_ppo_positive_advantage_clips_high_only():
    # A = +1, eps_high = 0.28: loss = -min(r, clip(r, .8, 1.28))
    ratios = [[0.7, 1.0, 1.28 - D, 1.28 + D, 1.5]]
    out, grad = run(PPOClip(eps_low=0.2, eps_high=0.28), ratios, [1.0])
    # r=0.7 below 1 - eps_low is NOT clipped for A > 0 (min picks r): loss -0.7, grad -0.7
    expected_loss = [[-0.7, -1.0, -(1.28 - D), -1.28, -1.28]]
    torch.testing.assert_close(out.loss, torch.tensor(expected_loss, dtype=torch.float64))
    torch.testing.assert_close(grad, torch.tensor([[-0.7, -1.0, -(1.28 - D), 0.0, 0.0]],
                                                  dtype=torch.float64))
    assert out.stats["clip_frac_high"].item() == pytest.approx(2 / 5)
    assert out.stats["clip_frac_low"].item() == 0.0
    assert out.stats["clip_frac"].item() == pytest.approx(2 / 5)


def test_ppo_negative_advantage_clips_low_only():
    # A = -1, eps_low = 0.2: loss = max(r, clip(r, .8, 1.28)) (= -min(-r, -clip(r)))
    ratios = [[0.5, 0.8 - D, 0.8 + D, 1.0, 1.5]]
    out, grad = run(PPOClip(eps_low=0.2, eps_high=0.28), ratios, [-1.0])
    # r=1.5 above 1 + eps_high is NOT clipped for A < 0: loss 1.5, grad 1.5
    expected = [[0.8, 0.8, 0.8 + D, 1.0, 1.5]]
    torch.testing.assert_close(out.loss, torch.tensor(expected, dtype=torch.float64))
    torch.testing.assert_close(grad, torch.tensor([[0.0, 0.0, 0.8 + D, 1.0, 1.5]],
                                                  dtype=torch.float64))
    assert out.stats["clip_frac_low"].item() == pytest.approx(2 / 5)
    assert out.stats["clip_frac_high"].item() == 0.0


def test_ppo_scales_with_advantage_and_reports_ratio_stats():
    # A = 2, r = [0.9, 1.1] inside [0.8, 1.2]: loss = -2 r, grad = -2 r
    out, grad = run(PPOClip(), [[0.9, 1.1]], [2.0])
    torch.testing.assert_close(out.loss, torch.tensor([[-1.8, -2.2]], dtype=torch.float64))
    torch.testing.assert_close(grad, torch.tensor([[-1.8, -2.2]], dtype=torch.float64))
    assert out.stats["ratio_mean"].item() == pytest.approx(1.0)
    assert out.stats["ratio_min"].item() == pytest.approx(0.9)
    assert out.stats["ratio_max"].item() == pytest.approx(1.1)
    # approx_kl = mean(exp(lr) - 1 - lr) with lr = log r:
    # (0.9 - 1 - ln .9 + 1.1 - 1 - ln 1.1) / 2 = (-ln .9 - ln 1.1) / 2
    expected_kl = (-math.log(0.9) - math.log(1.1)) / 2
    assert out.stats["approx_kl"].item() == pytest.approx(expected_kl, rel=1e-5)


def test_exactly_on_the_boundaries_the_trust_region_is_closed():
    # ratio given directly (1.25 and 0.75 are exact in binary), eps_low = eps_high = 0.25
    # A = +1 at r = 1 + eps: both branches give -1.25; A = -1 at r = 1 - eps: both 0.75.
    # On the boundary the token still gets the unclipped gradient d(-r A)/dr = -A and is
    # not counted as clipped.
    ratio = torch.tensor([[1.25, 0.75]], dtype=torch.float64, requires_grad=True)
    adv = torch.tensor([[1.0, -1.0]], dtype=torch.float64)
    loss, stats = clipped_surrogate(ratio, adv, torch.ones(1, 2, dtype=torch.float64),
                                    eps_low=0.25, eps_high=0.25, dual_clip=None)
    loss.sum().backward()
    torch.testing.assert_close(loss.detach(), torch.tensor([[-1.25, 0.75]], dtype=torch.float64))
    torch.testing.assert_close(ratio.grad, torch.tensor([[-1.0, 1.0]], dtype=torch.float64))
    assert stats["clip_frac"].item() == 0.0


def test_dual_clip_bounds_negative_advantage_loss():
    # A = -1, c = 3: loss = min(max(r, clip(r)), 3)
    # r = 2 -> 2 (grad 2); r = 3 + D -> 3 (grad 0, dual clip active); r = 4 -> 3 (grad 0)
    out, grad = run(PPOClip(dual_clip=3.0), [[2.0, 3.0 + D, 4.0]], [-1.0])
    torch.testing.assert_close(out.loss, torch.tensor([[2.0, 3.0, 3.0]], dtype=torch.float64))
    torch.testing.assert_close(grad, torch.tensor([[2.0, 0.0, 0.0]], dtype=torch.float64))
    assert out.stats["dual_clip_frac"].item() == pytest.approx(2 / 3)


def test_dual_clip_leaves_positive_advantages_alone():
    # A = +2, r = 4: ordinary high clip -> -(1.2) * 2 = -2.4; the dual clip is for A < 0
    out, _ = run(PPOClip(dual_clip=3.0), [[4.0]], [2.0])
    assert out.loss.item() == pytest.approx(-2.4)
    assert out.stats["dual_clip_frac"].item() == 0.0


def test_mask_zeroes_loss_gradient_and_stats_even_with_inf_padding():
    logprobs = torch.tensor([[math.log(1.5), -math.inf]], dtype=torch.float64,
                            requires_grad=True)
    old = torch.tensor([[0.0, -math.inf]], dtype=torch.float64)
    mask = torch.tensor([[1.0, 0.0]], dtype=torch.float64)
    out = PPOClip()(logprobs, old, torch.tensor([1.0], dtype=torch.float64), mask)
    out.loss.sum().backward()
    # token 0: r = 1.5 > 1.2 with A = 1 -> clipped: loss -1.2, grad 0; token 1 masked
    torch.testing.assert_close(out.loss, torch.tensor([[-1.2, 0.0]], dtype=torch.float64))
    assert torch.equal(logprobs.grad, torch.zeros(1, 2, dtype=torch.float64))
    assert out.stats["clip_frac_high"].item() == 1.0  # 1 of 1 valid token
    assert out.stats["ratio_max"].item() == pytest.approx(1.5)


def test_sequence_and_token_advantages_agree():
    torch.manual_seed(0)
    logprobs = torch.randn(3, 4, dtype=torch.float64) * 0.3
    old = torch.randn(3, 4, dtype=torch.float64) * 0.3
    mask = torch.ones(3, 4, dtype=torch.float64)
    adv = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)
    for loss_fn in (PPOClip(dual_clip=2.0), GSPO(eps_low=0.1, eps_high=0.1)):
        a = loss_fn(logprobs, old, adv, mask).loss
        b = loss_fn(logprobs, old, adv[:, None].expand(3, 4), mask).loss
        torch.testing.assert_close(a, b)


def test_gspo_sequence_ratio_by_hand():
    # old = [-1, -2, -3]; new = old + [0.3, -0.1, 0.1]: mean log-ratio = 0.3 / 3 = 0.1
    # s = e^0.1 = 1.105171, inside [0.8, 1.2]; A = +1: every token's loss = -s
    old = torch.tensor([[-1.0, -2.0, -3.0]], dtype=torch.float64)
    logprobs = (old + torch.tensor([[0.3, -0.1, 0.1]], dtype=torch.float64)).requires_grad_()
    mask = torch.ones(1, 3, dtype=torch.float64)
    out = GSPO(eps_low=0.2, eps_high=0.2)(logprobs, old, torch.tensor([1.0]), mask)
    s = math.exp(0.1)
    torch.testing.assert_close(out.loss, torch.full((1, 3), -s, dtype=torch.float64))
    # sequence-mean over 3 tokens: J = -s A, dJ/dlogp_t = -s A / 3 for every token
    SequenceMean()(out.loss, mask).backward()
    torch.testing.assert_close(logprobs.grad, torch.full((1, 3), -s / 3, dtype=torch.float64))


def test_gspo_clips_whole_sequence_and_ignores_padding():
    # valid log-ratios [-0.1, -0.1], padding 5.0 ignored: s = e^-0.1 = 0.904837
    # A = -1, eps_low = 0.05: s < 0.95 -> clipped, loss = 0.95 on both valid tokens, grad 0
    old = torch.zeros(1, 3, dtype=torch.float64)
    logprobs = torch.tensor([[-0.1, -0.1, 5.0]], dtype=torch.float64, requires_grad=True)
    mask = torch.tensor([[1.0, 1.0, 0.0]], dtype=torch.float64)
    out = GSPO(eps_low=0.05, eps_high=0.05)(logprobs, old, torch.tensor([-1.0]), mask)
    torch.testing.assert_close(out.loss, torch.tensor([[0.95, 0.95, 0.0]], dtype=torch.float64))
    out.loss.sum().backward()
    assert torch.equal(logprobs.grad, torch.zeros(1, 3, dtype=torch.float64))
    assert out.stats["clip_frac_low"].item() == 1.0
    assert out.stats["ratio_mean"].item() == pytest.approx(math.exp(-0.1))


def test_gspo_gradient_matches_sequence_level_objective():
    # Independent implementation: GSPO's sequence objective written directly,
    # J = mean_i min(s_i A_i, clip(s_i) A_i), differentiated by autograd through s_i.
    torch.manual_seed(1)
    old = torch.randn(4, 5, dtype=torch.float64)
    delta = torch.randn(4, 5, dtype=torch.float64) * 0.2
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 0, 0, 0, 0], [1, 1, 1, 1, 0]],
                        dtype=torch.float64)
    adv = torch.tensor([1.0, -1.5, 0.7, -0.3], dtype=torch.float64)
    eps = 0.05  # small enough that some sequences clip

    ours = (old + delta).requires_grad_()
    out = GSPO(eps_low=eps, eps_high=eps)(ours, old, adv, mask)
    SequenceMean()(out.loss, mask).backward()

    ref = (old + delta).requires_grad_()
    s = torch.exp(((ref - old) * mask).sum(1) / mask.sum(1))  # [B]
    objective = torch.minimum(s * adv, s.clamp(1 - eps, 1 + eps) * adv).mean()
    (-objective).backward()
    torch.testing.assert_close(ours.grad, ref.grad * mask)
    assert 0 < out.stats["clip_frac"].item() < 1  # the check covered both branches


def test_ppo_gradcheck_inside_clip_region():
    torch.manual_seed(2)
    old = torch.randn(2, 3, dtype=torch.float64)
    logprobs = (old + 0.05 * torch.randn(2, 3, dtype=torch.float64)).requires_grad_()
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]], dtype=torch.float64)
    adv = torch.tensor([0.5, -1.0], dtype=torch.float64)
    assert torch.autograd.gradcheck(
        lambda lp: TokenMean()(PPOClip()(lp, old, adv, mask).loss, mask), (logprobs,))


@pytest.mark.parametrize("kwargs, message", [
    ({"eps_low": 1.0}, "eps_low"), ({"eps_high": -0.1}, "eps_high"),
    ({"dual_clip": 1.0}, "dual_clip")])
def test_bad_clip_settings(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PPOClip(**kwargs)


def test_bad_shapes():
    lp = torch.zeros(2, 3)
    with pytest.raises(ValueError, match="advantages"):
        PPOClip()(lp, lp, torch.zeros(3), torch.ones(2, 3))
    with pytest.raises(ValueError, match="same"):
        PPOClip()(lp, torch.zeros(2, 4), torch.zeros(2), torch.ones(2, 3))


@pytest.mark.parametrize("loss_fn", [PPOClip(dual_clip=3.0), GSPO()])
def test_declared_statistics_are_the_ones_reported(loss_fn):
    out, _ = run(loss_fn, [[0.5, 1.0, 1.5]], [1.0])
    assert set(out.stats) == set(loss_fn.stat_reductions)
    assert set(loss_fn.stat_reductions.values()) <= {"mean", "min", "max"}
