"""Sampler/trainer mismatch statistics and the importance-sampling corrections
(rlvr.algorithms.rollout_correction), on small tensors whose values are worked by hand."""

from __future__ import annotations

import math

import pytest
import torch

from rlvr.algorithms import (ROLLOUT_CORRECTIONS, MaskedIS, NoCorrection, SequenceMaskedIS,
                             SequenceTruncatedIS, TruncatedIS, mismatch_stats,
                             rollout_correction)

LN2, LN3 = math.log(2.0), math.log(3.0)


def _case():
    """Two rows of three tokens. Row 0's ratios pi_trainer / pi_sampler are 0.5, 1, 3;
    row 1's first is 2 and its last two are padding, holding garbage (a ratio of e^40
    and a -inf) that must count nowhere."""
    sampler = torch.tensor([[-1.0, -2.0, -3.0], [-1.0, -1.0, 0.0]])
    trainer = sampler + torch.tensor([[-LN2, 0.0, LN3], [LN2, 40.0, 0.0]])
    trainer[1, 2] = float("-inf")
    mask = torch.tensor([[1, 1, 1], [1, 0, 0]])
    return trainer, sampler, mask


def _k3(ratio: float) -> float:
    return ratio - 1 - math.log(ratio)


def test_mismatch_stats_over_the_valid_tokens_only():
    stats = mismatch_stats(*_case())
    ratios = [0.5, 1.0, 3.0, 2.0]
    assert list(stats) == ["mismatch/kl", "mismatch/abs_dlogprob", "mismatch/ratio_min",
                           "mismatch/ratio_mean", "mismatch/ratio_max"]
    assert stats["mismatch/kl"] == pytest.approx(sum(map(_k3, ratios)) / 4, rel=1e-6)
    assert stats["mismatch/abs_dlogprob"] == pytest.approx((LN2 + 0 + LN3 + LN2) / 4, rel=1e-6)
    assert stats["mismatch/ratio_min"] == pytest.approx(0.5, rel=1e-6)
    assert stats["mismatch/ratio_mean"] == pytest.approx(6.5 / 4, rel=1e-6)
    assert stats["mismatch/ratio_max"] == pytest.approx(3.0, rel=1e-6)


def test_mismatch_of_agreeing_engines_and_of_an_empty_mask_is_neutral():
    lp = torch.tensor([[-0.3, -1.2]])
    same = mismatch_stats(lp, lp.clone(), torch.ones(1, 2))
    neutral = {"mismatch/kl": 0.0, "mismatch/abs_dlogprob": 0.0, "mismatch/ratio_min": 1.0,
               "mismatch/ratio_mean": 1.0, "mismatch/ratio_max": 1.0}
    assert same == neutral
    assert mismatch_stats(lp, lp - 5.0, torch.zeros(1, 2)) == neutral


def test_mismatch_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match="same"):
        mismatch_stats(torch.zeros(2, 3), torch.zeros(2, 2), torch.ones(2, 3))


def test_truncated_is_caps_each_token_ratio():
    out = TruncatedIS(threshold=2.5)(*_case())
    expected = torch.tensor([[0.5, 1.0, 2.5], [2.0, 0.0, 0.0]])  # padding: weight 0
    assert torch.allclose(out.weights, expected, atol=1e-6)
    assert out.stats["correction/clipped_frac"] == pytest.approx(1 / 4)  # the 3
    assert out.stats["correction/weight_mean"] == pytest.approx(6.0 / 4, rel=1e-6)


def test_truncated_is_below_every_ratio_gives_the_threshold_everywhere():
    out = TruncatedIS(threshold=0.25)(*_case())
    assert torch.allclose(out.weights, torch.tensor([[0.25] * 3, [0.25, 0, 0]]))
    assert out.stats["correction/clipped_frac"] == 1.0


def test_masked_is_drops_tokens_outside_the_bounds():
    out = MaskedIS(lower=0.6, upper=2.5)(*_case())  # drops 0.5 and 3, keeps 1 and 2
    assert torch.equal(out.weights, torch.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]]))
    assert out.stats["correction/clipped_frac"] == 0.5
    assert out.stats["correction/weight_mean"] == 0.5
    # the bounds are inclusive: [0.5, 3] keeps all four
    wide = MaskedIS(lower=0.5 - 1e-6, upper=3.0 + 1e-5)(*_case())
    assert torch.equal(wide.weights, torch.tensor([[1.0, 1.0, 1.0], [1.0, 0.0, 0.0]]))
    assert wide.stats == {"correction/clipped_frac": 0.0, "correction/weight_mean": 1.0}


def test_sequence_modes_use_the_geometric_mean_of_the_sequence():
    """Row 0: (0.5 * 1 * 3) ** (1/3) = 1.5 ** (1/3) ~ 1.1447; row 1: 2 (one valid token)."""
    s0 = 1.5 ** (1 / 3)
    tis = SequenceTruncatedIS(threshold=1.5)(*_case())
    assert torch.allclose(tis.weights, torch.tensor([[s0] * 3, [1.5, 0, 0]]), atol=1e-6)
    assert tis.stats["correction/clipped_frac"] == pytest.approx(1 / 4)  # row 1's token
    mis = SequenceMaskedIS(lower=0.5, upper=1.5)(*_case())
    assert torch.equal(mis.weights, torch.tensor([[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]]))
    assert mis.stats["correction/weight_mean"] == pytest.approx(3 / 4)
    low = SequenceMaskedIS(lower=1.2, upper=3.0)(*_case())  # s0 < 1.2: row 0 dropped
    assert torch.equal(low.weights, torch.tensor([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0]]))


def test_weights_are_detached_even_from_inputs_with_grad():
    trainer, sampler, mask = _case()
    trainer = trainer.clone().requires_grad_(True)
    assert not TruncatedIS()(trainer, sampler, mask).weights.requires_grad
    assert not MaskedIS()(trainer, sampler, mask).weights.requires_grad


def test_an_empty_mask_gives_zero_weights_and_neutral_stats():
    trainer, sampler, _ = _case()
    for name in ("tis", "mis", "seq_tis", "seq_mis"):
        out = rollout_correction(name)(trainer, sampler, torch.zeros(2, 3))
        assert torch.equal(out.weights, torch.zeros(2, 3)), name
        assert out.stats == {"correction/clipped_frac": 0.0,
                             "correction/weight_mean": 1.0}, name


def test_none_has_no_weights_and_no_stats():
    out = NoCorrection()(*_case())
    assert out.weights is None and out.stats == {}
    assert not NoCorrection.active and TruncatedIS.active and MaskedIS.active


def test_registry_builds_by_name_and_checks_values():
    assert sorted(ROLLOUT_CORRECTIONS) == ["mis", "none", "seq_mis", "seq_tis", "tis"]
    assert rollout_correction("tis") == TruncatedIS(threshold=2.0)
    assert rollout_correction("mis", upper="1.5") == MaskedIS(lower=0.5, upper=1.5)
    with pytest.raises(ValueError, match="threshold must be > 0"):
        rollout_correction("tis", threshold=0)
    with pytest.raises(ValueError, match="lower < upper"):
        rollout_correction("mis", lower=2.0, upper=2.0)
    with pytest.raises(ValueError, match="lower < upper"):
        rollout_correction("seq_mis", lower=-0.1)
    with pytest.raises(ValueError, match="unknown rollout correction 'tiss'"):
        rollout_correction("tiss")
    with pytest.raises(ValueError, match="has no option"):
        rollout_correction("tis", upper=2.0)
