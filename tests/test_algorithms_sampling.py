"""DAPO dynamic sampling bookkeeping and overlong handling, by hand."""

import pytest
import torch

from rlvr.algorithms import (GroupAccumulator, mask_truncated, nonconstant_groups,
                             soft_overlong_penalty)


def test_nonconstant_groups():
    rewards = torch.tensor([[1.0, 1.0], [0.0, 1.0], [0.5, 0.5]])
    assert nonconstant_groups(rewards).tolist() == [False, True, False]


def test_accumulator_fills_then_stops():
    acc = GroupAccumulator(target_groups=2, max_draws=5)
    informative = acc.add(torch.tensor([[1.0, 1.0], [0.0, 1.0]]), ["a", "b"])
    assert informative.tolist() == [False, True]
    assert acc.kept == 1 and not acc.done
    # second draw: c constant, d and e informative, but only one slot is left -> d
    acc.add(torch.tensor([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]), ["c", "d", "e"])
    assert acc.full and acc.done
    rewards, groups = acc.result()
    assert groups == ["b", "d"]
    torch.testing.assert_close(rewards, torch.tensor([[0.0, 1.0], [1.0, 0.0]]))
    assert acc.stats() == {"draws": 2.0, "groups_seen": 5.0, "groups_informative": 3.0,
                           "groups_kept": 2.0, "informative_fraction": 3 / 5}


def test_accumulator_gives_up_after_max_draws():
    acc = GroupAccumulator(target_groups=5, max_draws=2)
    acc.add(torch.tensor([[1.0, 1.0]]), ["a"])
    assert not acc.done
    acc.add(torch.tensor([[0.0, 1.0]]), ["b"])
    assert acc.done and not acc.full
    assert acc.result()[1] == ["b"]


def test_accumulator_with_nothing_kept():
    acc = GroupAccumulator(target_groups=1, max_draws=1)
    acc.add(torch.zeros(2, 3), [0, 1])
    assert acc.done and acc.result() == (None, [])


def test_accumulator_errors():
    with pytest.raises(ValueError, match="target_groups"):
        GroupAccumulator(target_groups=0, max_draws=1)
    acc = GroupAccumulator(target_groups=3, max_draws=3)
    with pytest.raises(ValueError, match="groups"):
        acc.add(torch.zeros(2, 2), ["only one"])
    acc.add(torch.tensor([[0.0, 1.0]]), ["a"])
    with pytest.raises(ValueError, match="group size"):
        acc.add(torch.tensor([[0.0, 1.0, 1.0]]), ["b"])


def test_soft_overlong_penalty_boundaries():
    # max 16, cache 4: ramp starts after 12 tokens
    # 12 -> 0 ; 13 -> (12 - 13) / 4 = -0.25 ; 15 -> -0.75 ; 16 -> -1.0 ; 17 -> -1 (beyond)
    lengths = torch.tensor([0, 12, 13, 15, 16, 17])
    torch.testing.assert_close(soft_overlong_penalty(lengths, max_length=16, cache_length=4),
                               torch.tensor([0.0, 0.0, -0.25, -0.75, -1.0, -1.0]))


def test_soft_overlong_penalty_without_cache_is_a_step():
    lengths = torch.tensor([16, 17])
    torch.testing.assert_close(soft_overlong_penalty(lengths, 16, 0), torch.tensor([0.0, -1.0]))


def test_soft_overlong_penalty_bad_args():
    with pytest.raises(ValueError, match="cache_length"):
        soft_overlong_penalty(torch.tensor([1]), max_length=4, cache_length=5)


def test_mask_truncated():
    mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 1.0, 1.0]])
    out = mask_truncated(mask, torch.tensor([False, True]))
    torch.testing.assert_close(out, torch.tensor([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]))
    with pytest.raises(ValueError, match="truncated"):
        mask_truncated(mask, torch.tensor([True]))
