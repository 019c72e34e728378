"""Selecting algorithm pieces by name, with clear errors."""

import pytest
import torch

from rlvr.algorithms import (GSPO, ConstantNormalizer, PPOClip, ReinforcePP, TokenMean,
                             advantage_estimator, kl_estimator, kl_k3, loss_aggregation,
                             policy_loss)


def test_build_by_name_with_options():
    assert advantage_estimator("reinforce_pp", eps=0.1) == ReinforcePP(eps=0.1)
    assert policy_loss("ppo_clip", eps_high=0.28) == PPOClip(eps_low=0.2, eps_high=0.28)
    assert policy_loss("gspo", dual_clip=3.0) == GSPO(dual_clip=3.0)
    assert loss_aggregation("constant", max_length=64) == ConstantNormalizer(max_length=64)
    assert loss_aggregation("token_mean", max_length=64) == TokenMean()  # ignored there
    assert kl_estimator("k3") is kl_k3


def test_built_objects_work():
    rewards = torch.tensor([[1.0, 0.0]])
    torch.testing.assert_close(advantage_estimator("dr_grpo")(rewards),
                               torch.tensor([[0.5, -0.5]]))


def test_unknown_names_and_options():
    with pytest.raises(ValueError, match=r"unknown advantage estimator 'gpro'.*grpo"):
        advantage_estimator("gpro")
    with pytest.raises(ValueError, match="no option.*clip_eps.*eps_high"):
        policy_loss("ppo_clip", clip_eps=0.2)
    with pytest.raises(ValueError, match="needs max_length"):
        loss_aggregation("constant")
    with pytest.raises(ValueError, match="unknown KL estimator 'k4'"):
        kl_estimator("k4")
    with pytest.raises(ValueError, match="unknown loss aggregation"):
        loss_aggregation("mean")


def test_numeric_strings_become_numbers_for_float_options():
    # YAML 1.1 reads "1e-3" as a string
    assert policy_loss("gspo", eps_low="1e-3", dual_clip="3") == GSPO(eps_low=1e-3,
                                                                       dual_clip=3.0)
    with pytest.raises(ValueError, match="policy loss 'ppo_clip'"):
        policy_loss("ppo_clip", eps_high="wide")
