"""Loss terms beyond the surrogate, by hand, and the row skipping their declarations
decide (rlvr.algorithms.loss_terms)."""

import math
from dataclasses import dataclass

import pytest
import torch

from rlvr.algorithms import GSPO, PPOClip
from rlvr.algorithms.loss_terms import EntropyBonus, KLPenalty, TermInputs, rows_with_signal

MASK = torch.tensor([[1.0, 1.0], [1.0, 0.0], [0.0, 0.0], [1.0, 1.0]])  # row 2: no tokens
ADVANTAGES = torch.tensor([0.5, 0.0, 1.0, -2.0])  # row 1: no signal


def test_kl_penalty_by_hand():
    # log_r = logp_ref - logp = log 0.5: k3 = 0.5 - log 0.5 - 1 = log 2 - 0.5
    inputs = TermInputs(logprobs=torch.zeros(1, 1), entropy=torch.zeros(1, 1),
                        mask=torch.ones(1, 1), ref_logprobs=torch.tensor([[math.log(0.5)]]))
    term = KLPenalty(beta=0.1)
    assert term.coef == 0.1
    assert term.per_token(inputs).item() == pytest.approx(math.log(2) - 0.5)
    assert KLPenalty(0.1, "k1").per_token(inputs).item() == pytest.approx(math.log(2))
    with pytest.raises(ValueError, match="unknown KL estimator 'k9'; known: k1, k2, k3"):
        KLPenalty(0.1, "k9")


def test_entropy_bonus_is_a_negative_coefficient_on_the_entropy():
    entropy = torch.tensor([[0.3, 0.7]])
    inputs = TermInputs(torch.zeros(1, 2), entropy, torch.ones(1, 2))
    assert EntropyBonus(0.01).coef == -0.01
    assert torch.equal(EntropyBonus(0.01).per_token(inputs), entropy)


def test_declarations():
    assert not PPOClip.touches_zero_advantage and not GSPO.touches_zero_advantage
    assert KLPenalty.touches_zero_advantage and EntropyBonus.touches_zero_advantage


def test_surrogates_alone_skip_rows_without_signal_or_tokens():
    assert rows_with_signal([PPOClip()], MASK, ADVANTAGES).tolist() == [0, 3]
    assert rows_with_signal([GSPO()], MASK, ADVANTAGES).tolist() == [0, 3]


@pytest.mark.parametrize("term", [KLPenalty(0.1), EntropyBonus(0.01)])
def test_a_term_that_touches_zero_advantage_rows_keeps_every_row(term):
    assert rows_with_signal([PPOClip(), term], MASK, ADVANTAGES).tolist() == [0, 1, 2, 3]


def test_a_new_term_states_its_own_answer():
    @dataclass(frozen=True)
    class AdvantageWeighted:  # a term whose loss is a multiple of A: 0 at A = 0
        touches_zero_advantage = False

    @dataclass(frozen=True)
    class Undeclared:
        pass

    assert rows_with_signal([PPOClip(), AdvantageWeighted()], MASK, ADVANTAGES).tolist() == [0, 3]
    with pytest.raises(AttributeError, match="touches_zero_advantage"):
        rows_with_signal([PPOClip(), Undeclared()], MASK, ADVANTAGES)


def test_zero_advantage_rows_give_the_surrogates_no_gradient():
    """What the declaration claims: loss and gradient exactly 0 at A = 0 (with dual clip)."""
    logprobs = torch.tensor([[-0.3, -2.0]], requires_grad=True)
    old = torch.tensor([[-1.0, -0.5]])
    for loss_fn in (PPOClip(dual_clip=3.0), GSPO()):
        out = loss_fn(logprobs, old, torch.zeros(1), torch.ones(1, 2))
        out.loss.sum().backward()
        assert torch.equal(out.loss, torch.zeros(1, 2))
        assert torch.equal(logprobs.grad, torch.zeros(1, 2))
        logprobs.grad = None
