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


def _single_running_sum(probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """The one-level inversion: a float64 running sum over the whole row."""
    cdf = probs.double().cumsum(-1)  # [B, V]
    u = torch.rand((probs.shape[0], 1), generator=generator, dtype=torch.float64) * cdf[:, -1:]
    return torch.searchsorted(cdf, u, right=True)[:, 0]


def test_two_level_draw_equals_one_running_sum():
    """Blocks, a short last block (vocab not a multiple of the block) and zero-mass
    stretches: the two-level draw picks the token a single running sum picks."""
    generator = torch.Generator().manual_seed(3)
    for vocab in (7, 256, 1000, 49152):
        for trial in range(20):
            logits = torch.randn(8, vocab, generator=generator) * (1 + trial % 5)
            if trial % 2:  # a filtered distribution: many tokens with zero mass
                logits[torch.rand(8, vocab, generator=generator) < 0.7] = float("-inf")
                logits[:, 0] = 0.0  # every row keeps some mass
            probs = torch.softmax(logits, -1)
            seed = 100 * vocab + trial
            drawn = sample_tokens(probs, torch.Generator().manual_seed(seed))
            assert torch.equal(drawn, _single_running_sum(probs, torch.Generator().manual_seed(seed)))
            assert (probs.gather(1, drawn[:, None]) > 0).all()


def test_mass_only_in_the_short_last_block():
    probs = torch.zeros(2, 300)  # blocks of 256: tokens 256..299 form the short last block
    probs[0, 299] = 1.0
    probs[1, 260], probs[1, 3] = 0.5, 0.5
    generator = torch.Generator().manual_seed(0)
    tokens = torch.stack([sample_tokens(probs, generator) for _ in range(100)])  # [100, 2]
    assert (tokens[:, 0] == 299).all()
    assert set(tokens[:, 1].tolist()) == {3, 260}
