"""Inverse-CDF token sampling draws from the given distribution: frequencies over many
draws match the probabilities (a chi-square bound), zero-probability tokens never come
up, unnormalised rows work, and a seeded generator repeats its draws."""

from __future__ import annotations

import torch

from rlvr.rollout.sampling import sample_tokens


def test_frequencies_match_probabilities():
    probs = torch.tensor([[0.5, 0.0, 0.2, 0.3], [0.05, 0.05, 0.0, 0.9]])
    draws = 20_000
    generator = torch.Generator().manual_seed(0)
    counts = torch.zeros_like(probs)
    for _ in range(draws // 1000):
        batch = probs.repeat_interleave(1000, 0)  # [2000, 4]: 1000 copies of each row
        tokens = sample_tokens(batch, generator).view(2, 1000)
        for row in range(2):
            counts[row] += torch.bincount(tokens[row], minlength=4).float()
    assert counts[0, 1] == 0 and counts[1, 2] == 0  # zero mass is never drawn
    expected = probs * draws
    nonzero = expected > 0
    chi2 = ((counts - expected)[nonzero] ** 2 / expected[nonzero]).sum()
    # 5 non-empty cells, 2 row totals fixed: 3 degrees of freedom; P(chi2 > 21.1) = 1e-4
    assert chi2 < 21.1, (counts, expected)


def test_unnormalised_rows_and_a_one_hot_row():
    generator = torch.Generator().manual_seed(1)
    probs = torch.tensor([[0.0, 0.0, 7.0], [2.0, 2.0, 0.0]])
    tokens = torch.stack([sample_tokens(probs, generator) for _ in range(200)])  # [200, 2]
    assert (tokens[:, 0] == 2).all()
    assert set(tokens[:, 1].tolist()) == {0, 1}


def test_seeded_draws_repeat():
    probs = torch.softmax(torch.randn(3, 1000, generator=torch.Generator().manual_seed(2)), -1)
    first = sample_tokens(probs, torch.Generator().manual_seed(5))
    assert torch.equal(first, sample_tokens(probs, torch.Generator().manual_seed(5)))
