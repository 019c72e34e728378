"""Loss aggregations on masks of different lengths, by hand."""

import pytest
import torch

from rlvr.algorithms import AGGREGATIONS, ConstantNormalizer, SequenceMean, TokenMean, masked_mean

# padding holds 100 so that any leak of a masked position shows in the result
LOSS = torch.tensor([[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 100.0, 100.0]])
MASK = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])


def test_token_mean():
    # (1 + 2 + 3 + 4 + 5 + 6) / 6 tokens = 21 / 6 = 3.5
    assert TokenMean()(LOSS, MASK).item() == pytest.approx(3.5)


def test_sequence_mean():
    # per sequence: 10 / 4 = 2.5 and 11 / 2 = 5.5; mean over 2 sequences = 4.0
    assert SequenceMean()(LOSS, MASK).item() == pytest.approx(4.0)


def test_constant_normalizer():
    # 21 / (B=2 * max_length=8) = 1.3125, whatever the sampled lengths
    assert ConstantNormalizer(max_length=8)(LOSS, MASK).item() == pytest.approx(1.3125)


def test_fully_masked_sequence_still_counts_in_sequence_mean():
    # (1 + 2) / 2 = 1.5 for row 0; row 1 contributes 0 but B stays 2 -> 0.75
    loss = torch.tensor([[1.0, 2.0], [9.0, 9.0]])
    mask = torch.tensor([[1.0, 1.0], [0.0, 0.0]])
    assert SequenceMean()(loss, mask).item() == pytest.approx(0.75)
    assert TokenMean()(loss, mask).item() == pytest.approx(1.5)


def test_nan_at_padding_does_not_leak():
    loss = torch.tensor([[1.0, float("nan")]], requires_grad=True)
    mask = torch.tensor([[1, 0]])
    for agg in (TokenMean(), SequenceMean(), ConstantNormalizer(max_length=2)):
        out = agg(loss, mask)
        out.backward()
        assert torch.isfinite(out) and torch.isfinite(loss.grad).all()
        loss.grad = None


def test_empty_mask_gives_zero_not_nan():
    loss = torch.ones(2, 3)
    mask = torch.zeros(2, 3)
    for agg in (TokenMean(), SequenceMean(), ConstantNormalizer(max_length=3)):
        assert agg(loss, mask).item() == 0.0


@pytest.mark.parametrize("agg", [TokenMean(), SequenceMean(), ConstantNormalizer(max_length=6)])
def test_weights_sliced_over_micro_batches_equal_whole_batch(agg):
    torch.manual_seed(0)
    loss = torch.randn(5, 6, dtype=torch.float64)
    mask = (torch.rand(5, 6) > 0.3).double()
    whole = agg(loss, mask)
    weights = agg.weights(mask)  # [5, 6], computed once on the whole batch
    parts = sum((weights[idx] * loss[idx]).sum() for idx in ([0, 1], [2], [3, 4]))
    torch.testing.assert_close(parts, whole)


def test_gradient_of_aggregation_is_its_weights():
    # d(sum w * loss)/d loss = w: token-mean gives 1/6 on each of the 6 valid tokens
    loss = LOSS.clone().requires_grad_()
    TokenMean()(loss, MASK).backward()
    expected = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]]) / 6
    torch.testing.assert_close(loss.grad, expected)


def test_masked_mean():
    # (1 + 2 + 3 + 4 + 5 + 6) / 6 = 3.5; no valid values -> 0
    assert masked_mean(LOSS, MASK).item() == pytest.approx(3.5)
    assert masked_mean(LOSS, torch.zeros(2, 4)).item() == 0.0


def test_shape_errors_and_bad_max_length():
    with pytest.raises(ValueError, match=r"\[B, T\]"):
        TokenMean()(LOSS, MASK[:, :3])
    with pytest.raises(ValueError, match="max_length"):
        ConstantNormalizer(max_length=0)


def test_registry_names():
    assert set(AGGREGATIONS) == {"token_mean", "sequence_mean", "constant"}


def test_normalizers_by_hand():
    # MASK: 6 valid tokens in 2 rows
    assert TokenMean().normalizer(MASK).item() == 6.0
    assert SequenceMean().normalizer(MASK).item() == 2.0
    assert ConstantNormalizer(max_length=8).normalizer(MASK).item() == 16.0


@pytest.mark.parametrize("agg", [TokenMean(), SequenceMean(), ConstantNormalizer(max_length=6)])
def test_parts_with_the_whole_normalizer_sum_to_the_whole(agg):
    """Each part computes its own weights from its rows and the whole batch's normaliser,
    which is the sum of the parts' normalisers (what an all-reduce across ranks gives)."""
    torch.manual_seed(0)
    loss = torch.randn(5, 6, dtype=torch.float64)
    mask = (torch.rand(5, 6) > 0.3).double()
    parts = ([0, 1], [2], [3, 4])
    total = sum(agg.normalizer(mask[idx]) for idx in parts)
    torch.testing.assert_close(total, agg.normalizer(mask))
    summed = sum((agg.weights(mask[idx], total) * loss[idx]).sum() for idx in parts)
    torch.testing.assert_close(summed, agg(loss, mask))
    # a part alone, normalised by its own rows, is a different number
    alone = agg(loss[[2]], mask[[2]]) + agg(loss[[0, 1]], mask[[0, 1]])
    assert not torch.allclose(alone, agg(loss, mask))


def test_token_mean_weights_by_hand_with_a_given_normalizer():
    # row 1 of MASK as part of a batch of 6 valid tokens: 1/6 on its 2 tokens
    weights = TokenMean().weights(MASK[1:], torch.tensor(6.0))
    torch.testing.assert_close(weights, torch.tensor([[1.0, 1.0, 0.0, 0.0]]) / 6)
