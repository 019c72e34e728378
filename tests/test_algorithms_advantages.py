"""Advantage estimators against values computed by hand (arithmetic in the comments)."""

import math

import pytest
import torch

from rlvr.algorithms import ADVANTAGES, GRPO, RLOO, DrGRPO, ReinforcePP, ReinforcePPBaseline


def close(actual, expected, tol=1e-5):
    torch.testing.assert_close(actual, torch.tensor(expected, dtype=actual.dtype),
                               atol=tol, rtol=0)


def test_grpo_binary_group():
    # [1, 0, 0, 1]: mean 0.5; unbiased var = 4 * 0.25 / 3 = 1/3; std = 0.57735
    # A = +-0.5 / 0.57735 = +-sqrt(3)/2 = +-0.866025
    s = math.sqrt(3) / 2
    close(GRPO()(torch.tensor([[1.0, 0.0, 0.0, 1.0]])), [[s, -s, -s, s]])


def test_grpo_two_samples_and_eps():
    # [3, 1]: mean 2, unbiased std = sqrt((1 + 1) / 1) = sqrt(2); A = +-1 / (sqrt(2) + eps)
    eps = 0.5
    a = 1 / (math.sqrt(2) + eps)
    close(GRPO(eps=eps)(torch.tensor([[3.0, 1.0]])), [[a, -a]])


def test_grpo_constant_groups_are_exactly_zero():
    # 0.1 * 3 / 3 is not exactly 0.1 in float: the residue must not be divided by ~eps
    rewards = torch.tensor([[0.1, 0.1, 0.1], [1.0, 0.0, 1.0]])
    out = GRPO()(rewards)
    assert torch.equal(out[0], torch.zeros(3))
    # second group: mean 2/3, var = (1/9 + 4/9 + 1/9) / 2 = 1/3, std 0.57735
    # A = (1/3) / 0.57735 = 0.57735, (-2/3) / 0.57735 = -1.154701
    close(out[1], [0.577350, -1.154701, 0.577350])


def test_grpo_single_sample_group_is_zero():
    assert torch.equal(GRPO()(torch.tensor([[1.0], [0.0]])), torch.zeros(2, 1))


def test_dr_grpo_subtracts_mean_only():
    # row 1: mean 0.5 -> +-0.5; row 2: mean 5 -> [-3, -1, 1, 3] (no std division)
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [2.0, 4.0, 6.0, 8.0]])
    close(DrGRPO()(rewards), [[0.5, -0.5, -0.5, 0.5], [-3.0, -1.0, 1.0, 3.0]])


def test_rloo_leave_one_out():
    # [1, 0, 0, 1]: 1 - (0 + 0 + 1) / 3 = 2/3 ; 0 - (1 + 0 + 1) / 3 = -2/3
    # [2, 4, 6]: 2 - (4 + 6)/2 = -3 ; 4 - (2 + 6)/2 = 0 ; 6 - (2 + 4)/2 = 3
    close(RLOO()(torch.tensor([[1.0, 0.0, 0.0, 1.0]])), [[2 / 3, -2 / 3, -2 / 3, 2 / 3]])
    close(RLOO()(torch.tensor([[2.0, 4.0, 6.0]])), [[-3.0, 0.0, 3.0]])


def test_rloo_matches_loop_formula_on_random_rewards():
    torch.manual_seed(0)
    rewards = torch.rand(3, 5, dtype=torch.float64)
    expected = torch.empty_like(rewards)
    for p in range(3):
        for i in range(5):
            others = [rewards[p, j] for j in range(5) if j != i]
            expected[p, i] = rewards[p, i] - sum(others) / len(others)
    torch.testing.assert_close(RLOO()(rewards), expected)


def test_rloo_needs_two_samples():
    with pytest.raises(ValueError, match="G=1"):
        RLOO()(torch.tensor([[1.0]]))


def test_reinforce_pp_whitens_over_whole_batch():
    # all four rewards [1, 0, 0, 0]: mean 0.25; deviations .75, -.25, -.25, -.25
    # unbiased var = (.5625 + 3 * .0625) / 3 = .25, std .5
    # A = [1.5, -.5, -.5, -.5]: the all-zero group gets -0.5, not 0 (no group baseline)
    close(ReinforcePP()(torch.tensor([[1.0, 0.0], [0.0, 0.0]])), [[1.5, -0.5], [-0.5, -0.5]])


def test_reinforce_pp_baseline_group_mean_then_batch_std():
    # group means: 0.5 and 0 -> centred [.5, -.5], [0, 0]; batch mean 0
    # unbiased var = (.25 + .25) / 3 = 1/6, std = 0.408248; A = +-.5 / .408248 = +-1.224745
    a = 0.5 / math.sqrt(1 / 6)
    close(ReinforcePPBaseline()(torch.tensor([[1.0, 0.0], [0.0, 0.0]])), [[a, -a], [0.0, 0.0]])


def test_batch_estimators_on_constant_batch_are_zero():
    rewards = torch.full((2, 3), 0.7)
    assert torch.equal(ReinforcePP()(rewards), torch.zeros(2, 3))
    assert torch.equal(ReinforcePPBaseline()(rewards), torch.zeros(2, 3))


@pytest.mark.parametrize("name", sorted(ADVANTAGES))
def test_every_estimator_checks_shape_and_values(name):
    estimator = ADVANTAGES[name]()
    with pytest.raises(ValueError, match=r"\[P, G\]"):
        estimator(torch.tensor([1.0, 0.0]))
    with pytest.raises(ValueError, match="NaN"):
        estimator(torch.tensor([[1.0, float("nan")]]))
    out = estimator(torch.tensor([[1, 0], [0, 0]]))  # integer rewards are accepted
    assert out.dtype == torch.float32 and out.shape == (2, 2)


def test_registry_names():
    assert set(ADVANTAGES) == {"grpo", "dr_grpo", "rloo", "reinforce_pp",
                               "reinforce_pp_baseline"}
