"""Evaluation metrics: pure functions over verdicts, no model and no I/O.

- pass@k: the unbiased estimator of Chen et al. 2021 ("Evaluating Large Language Models
  Trained on Code", HumanEval), 1 - C(n-c, k) / C(n, k) for n samples of which c passed,
  computed as a running product so no binomial coefficient is ever formed.
- maj@k: majority vote over the final answers of k samples (self-consistency, Wang et
  al. 2022). See `maj_at_k` for how answers are grouped, how ties break and which
  estimator is used when n > k.
- IFEval: prompt-level and instruction-level accuracy as Zhou et al. 2023 report them.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import random
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Sequence


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k samples drawn without replacement from n
    samples (c of them correct) is correct: 1 - C(n-c, k) / C(n, k).

    C(n-c, k) / C(n, k) = prod_{i=n-c+1}^{n} (1 - k / i), a product of c factors in
    (0, 1], which stays accurate where the binomials themselves would overflow floats.
    """
    if not 0 <= c <= n:
        raise ValueError(f"pass@k needs 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"pass@k needs 1 <= k <= n, got n={n}, k={k}")
    if n - c < k:  # every k-subset contains a correct sample
        return 1.0
    fail = 1.0
    for i in range(n - c + 1, n + 1):
        fail *= 1.0 - k / i
    return 1.0 - fail


def mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else float("nan")


@dataclass(frozen=True)
class Vote:
    """One sample's ballot for majority voting: its answer key (None: no answer was
    extracted, so it does not vote) and whether that sample was judged correct."""

    key: Hashable | None
    passed: bool


def majority_vote(ballots: Sequence[Vote]) -> Vote | None:
    """The winning ballot of one vote, or None when nobody voted.

    The answer with the most votes wins; a tie goes to the tied answer that appears
    first in sample order (deterministic, and it does not favour any answer value).
    The winner's correctness is that of its first ballot: every ballot of one answer
    carries the same answer, so the verifier judged them alike.
    """
    counts: dict[Hashable, int] = {}
    first: dict[Hashable, Vote] = {}
    for ballot in ballots:
        if ballot.key is None:
            continue
        counts[ballot.key] = counts.get(ballot.key, 0) + 1
        first.setdefault(ballot.key, ballot)
    if not counts:
        return None
    best = max(counts.values())
    winner = next(key for key in first if counts[key] == best)  # dicts keep first-seen order
    return first[winner]


def maj_at_k(ballots: Sequence[Vote], k: int, max_subsets: int = 2000,
             seed: str = "") -> float:
    """Expected correctness of a majority vote over k of the n samples of one problem.

    With n == k this is the vote over all samples (0 or 1). With n > k it is the mean
    over k-subsets of the samples (each subset keeps sample order for the tie rule):
    every subset when there are at most `max_subsets` of them (exact), else
    `max_subsets` subsets drawn uniformly by a generator seeded from `seed` (the
    problem id), so the number is reproducible run to run. A vote with no answers
    counts as wrong.
    """
    n = len(ballots)
    if not 1 <= k <= n:
        raise ValueError(f"maj@k needs 1 <= k <= n, got n={n}, k={k}")
    if math.comb(n, k) <= max_subsets:
        subsets: Iterable[Sequence[int]] = itertools.combinations(range(n), k)
    else:
        rng = random.Random(hashlib.sha256(f"{seed}|{n}|{k}".encode()).hexdigest())
        subsets = (sorted(rng.sample(range(n), k)) for _ in range(max_subsets))
    total = count = 0
    for subset in subsets:
        winner = majority_vote([ballots[i] for i in subset])
        total += 1
        count += int(winner is not None and winner.passed)
    return count / total


def answer_key(details: dict[str, Any], keys: Sequence[str]) -> Hashable | None:
    """The answer a verdict's details name, for grouping votes: the first of `keys`
    present and non-empty, whitespace-collapsed if it is text; None if there is none."""
    for name in keys:
        value = details.get(name)
        if value is None or value == "":
            continue
        if isinstance(value, str):
            return " ".join(value.split())
        try:
            hash(value)
            return value
        except TypeError:
            return repr(value)
    return None


@dataclass(frozen=True)
class IFEvalCounts:
    """IFEval's four accuracies (Zhou et al. 2023, "Instruction-Following Evaluation
    for Large Language Models", section 3): prompt-level = share of responses that
    follow every instruction of their prompt; instruction-level = share of all
    instructions followed, pooled over prompts (not averaged per prompt)."""

    prompt_strict: float
    instruction_strict: float
    prompt_loose: float | None
    instruction_loose: float | None


def ifeval_accuracy(strict: Sequence[Sequence[bool]],
                    loose: Sequence[Sequence[bool]] | None = None) -> IFEvalCounts:
    """`strict[i]` holds the per-instruction results of response i (loose likewise,
    when the verifier offers loose results)."""

    def levels(rows: Sequence[Sequence[bool]]) -> tuple[float, float]:
        prompt = mean(float(all(row)) for row in rows)
        followed = sum(sum(bool(x) for x in row) for row in rows)
        total = sum(len(row) for row in rows)
        return prompt, (followed / total if total else float("nan"))

    p_strict, i_strict = levels(strict)
    if loose is None:
        return IFEvalCounts(p_strict, i_strict, None, None)
    p_loose, i_loose = levels(loose)
    return IFEvalCounts(p_strict, i_strict, p_loose, i_loose)
