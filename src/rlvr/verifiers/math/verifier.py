"""The math verifier ("math"): is the completion's final answer equal to the gold?

Pipeline: the final answer (the last commitment: box, marker, "the answer is", closing
`= VALUE`; final_answer.py) -> hedging checks -> normalisation -> shape (sets, tuples,
relations, ...) -> exact symbolic comparison. Each step is its own module; this one
wires them and names the outcome:

    correct        the final answer equals the gold
    wrong_answer   it does not
    no_answer      nothing marked as a final answer (or an empty box)
    hedged         several answers, an alternative, a negation, or several values
                   for a single-valued gold (details["hedge"] says which)
    conflicting    after the final answer, an emphasised different number that is no
                   commitment (`\\boxed{450}, that is **500**.`; conflicts.py). A later
                   commitment supersedes an earlier one instead: self-correction.
    echoes_prompt  the answer only restates an expression from the prompt
                   (`\\boxed{6 * 75}` for "What is 6 * 75?"; prompt_echo.py)
    unsimplified   the gold is a plain value and the answer is not written as one
                   (`6 * 75`, `449+1`, `\\frac{900}{2}`; answer_form.py)
    unparseable    the answer is not text we can read as math, and not equal as text
    too_large      the answer is a number too large to evaluate (`9^{9^{9^9}}`) and is
                   not written exactly as the gold
    too_slow       finding, parsing or comparing the answer ran past the verifier's own
                   time budget

The gold is parsed once per distinct string (cached), since a GRPO group checks many
completions against one gold.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

import sympy

from rlvr.verifiers.base import InvalidReference, Verdict
from rlvr.verifiers.math.answer_form import (ANSWER_FORMS, gold_value_kind, in_value_form,
                                             names_a_number)
from rlvr.verifiers.math.conflicts import conflicting_statement
from rlvr.verifiers.math.equivalence import COLLECTION_KINDS, Comparer, flat_items
from rlvr.verifiers.math.expressions import parse_expression
from rlvr.verifiers.math.extraction import Candidate, bare_answer, last_number, statement_end
from rlvr.verifiers.math.final_answer import commitments
from rlvr.verifiers.math.hedging import final_group, hedge_reason
from rlvr.verifiers.math.labels import values_by_name
from rlvr.verifiers.math.normalize import Normalized, normalize
from rlvr.verifiers.math.prompt_echo import echoes_prompt
from rlvr.verifiers.math.reference import gold_text
from rlvr.verifiers.math.safety import BudgetExceeded, time_budget
from rlvr.verifiers.math.structure import Shape, parse_shape

FALLBACKS = (None, "last_number")
# A final answer longer than this is not one (MATH-500's longest gold is 53 characters;
# a 5x5 matrix of fractions is ~400); it is also kept from the string rewrites.
MAX_ANSWER_CHARS = 2000
_AND = re.compile(r"\s*\\text\s*\{\s*and\s*\}\s*|\s+and\s+")
# For a multi-valued gold, "x = 1 or x = 2" lists the solutions, and for a union gold
# "x < 2 or x > 3" joins two rays; a hedge gains nothing there, since the collection or
# union must match the gold's exactly.
_OR = re.compile(r"\s*\\text\s*\{\s*or\s*\}\s*|\s+or\s+")
_OR_MEANS = {"list": ", ", "union": " \\cup "}
_ONE = sympy.Integer(1)


@lru_cache(maxsize=4096)
def _read(answer: str, or_means: str = "") -> tuple[Normalized, Shape]:
    """The normalised answer and its shape; `or_means` "list" or "union" reads "or"
    as that joint (for golds of that kind), "" leaves it to the hedging checks."""
    normalized = normalize(answer)
    text = _AND.sub(", ", normalized.text)
    joint = _OR_MEANS.get(or_means)
    return normalized, parse_shape(_OR.sub(lambda _: joint, text) if joint else text)


def _or_means(gold: Shape) -> str:
    if gold.kind in COLLECTION_KINDS:
        return "list"
    return "union" if gold.kind == "union" else ""


def _read_gold(reference: Any) -> tuple[Normalized, Shape]:
    # "or" in a gold lists its answers (`x = 2 \text{ or } x = 3`): a multi-valued gold
    normalized, shape = _read(gold_text(reference), or_means="list")
    if shape.kind == "empty":
        raise InvalidReference(f"math: reference {str(reference)[:100]!r} has no answer in it")
    return normalized, shape


def _named_value_count(gold: Shape) -> int:
    """How many values a gold of labelled values names (`k = 45, n = 2`, `x_1 = a,\\quad
    x_2 = b`: a relation between a tuple of names and a tuple of values), else 0."""
    if gold.kind != "relation" or values_by_name(gold) is None:
        return 0
    return len(gold.parts[1].parts)


@lru_cache(maxsize=4096)
def _gold_value_kind(gold: Shape) -> str | None:
    return gold_value_kind(gold)


def _percent_scales(answer: Normalized, gold: Normalized) -> tuple[sympy.Rational, ...]:
    """`25\\%` equals 25 and 0.25; a gold `25\\%` accepts 25 and 0.25. Never 200 for 2."""
    if answer.percent and not gold.percent:
        return (_ONE, sympy.Rational(1, 100))
    if gold.percent and not answer.percent:
        return (_ONE, sympy.Integer(100))
    return (_ONE,)


def _leaves(shape: Shape) -> list[Shape]:
    return [shape] if not shape.parts else [leaf for p in shape.parts for leaf in _leaves(p)]


def _failure_reason(shape: Shape) -> str:
    for leaf in _leaves(shape):
        if leaf.kind == "expr":
            parsed = parse_expression(leaf.text)
            if parsed is None:
                return "unparseable"
            if parsed.value is None:
                return "too_large"
    return "wrong_answer"


class MathVerifier:
    """Final-answer equivalence for math.

    A completion that is nothing but a short answer (`42`, `x = 3`: one line, at most
    two plain words) is its own answer, so callers that cut the answer out first (the
    `<answer>` block of r1_math) work. Without a box, marker or bare answer, the math of
    the closing sentence is the answer ("Therefore $x \\ge 5$ is the solution.",
    final_statement.py); other prose is no answer.

    fallback: None (default) — only a box, an answer marker, a bare answer or the
              closing sentence's math counts;
              "last_number" — with neither, the last number in the text is the answer
              (for plain-text datasets; off for boxed-style data so that a stray number
              in the reasoning cannot score).
    time_budget_s: parsing and comparison stop after this long with reason "too_slow"
              (in the main thread; the pool's hard 5 s kill stays the last resort).
              None turns it off.
    answer_form: "value" (default) — when the gold is a plain value (integer, decimal,
              fraction, simple surd or pi multiple) the answer must be written as a
              value: `6 * 75` for 450 is "unsimplified" (answer_form.py has every rule);
              "equivalent" — any symbolically equal answer counts. Symbolic golds
              (variables, sets, tuples, intervals, matrices) use equivalence either way.

    The prompt (optional, `verify(..., prompt=...)`) is the task as the model saw it:
    an answer that only restates one of its expressions is "echoes_prompt" in both
    answer forms.
    """

    name = "math"
    uses_prompt = True

    def __init__(self, fallback: str | None = None, time_budget_s: float | None = 3.0,
                 answer_form: str = "value") -> None:
        if fallback not in FALLBACKS:
            raise ValueError(f"math: fallback must be one of {FALLBACKS}, got {fallback!r}")
        if answer_form not in ANSWER_FORMS:
            raise ValueError(f"math: answer_form must be one of {ANSWER_FORMS}, got "
                             f"{answer_form!r}")
        self.fallback = fallback
        self.time_budget_s = time_budget_s
        self.answer_form = answer_form

    def check_reference(self, reference: Any) -> None:
        _read_gold(reference)

    def _candidates(self, completion: str, prompt: str | None) -> list[Candidate]:
        # the commitments in order, the final answer last (final_answer.py)
        candidates = commitments(completion, prompt)
        if candidates:
            return candidates
        bare = bare_answer(completion)
        if bare is None and self.fallback == "last_number":
            bare = last_number(completion)
        return [bare] if bare else []

    def _same_answer(self, first: str, second: str) -> bool:
        """Two stated answers are the same value (under the time budget)."""
        try:
            with time_budget(self.time_budget_s):
                return Comparer().equal(_read(first)[1], _read(second)[1])
        except BudgetExceeded:
            return False

    def _stated_form(self, group: list[Candidate], multi_valued: bool,
                     gold: Shape) -> tuple[str, str | None]:
        """The answer text to judge, and why its form fails ("unsimplified") or None.
        Several boxes of one value (`\\boxed{2} or equivalently \\boxed{\\frac42}`)
        state it in value form when any of them does."""
        kind = None if self.answer_form != "value" or multi_valued else _gold_value_kind(gold)
        if kind is None:
            return group[-1].text, None
        for candidate in reversed(group):
            if in_value_form(_read(candidate.text)[1], kind):
                return candidate.text, None
        return group[-1].text, "unsimplified"

    def verify(self, completion: str, reference: Any, prompt: str | None = None) -> Verdict:
        gold_norm, gold = _read_gold(reference)
        completion = completion or ""
        # template tokens after the text (`<|im_start|>user`) and "I hope it is correct."
        # are not part of what the completion states
        completion = completion[:statement_end(completion)]
        try:  # linear, but a budget all the same: the grader must answer in time
            with time_budget(self.time_budget_s):
                candidates = self._candidates(completion, prompt)
        except BudgetExceeded:
            return Verdict.wrong("too_slow", limit_s=self.time_budget_s, answer=None)
        if not candidates:
            return Verdict.wrong("no_answer", answer=None)
        group = final_group(completion, candidates)
        multi_valued = gold.kind in COLLECTION_KINDS
        named_values = _named_value_count(gold)  # `k = 45, n = 2`: 2; else 0
        if (multi_valued or named_values) and len(group) > 1:
            # a multi-valued gold: boxing each value (`\boxed{2}, \boxed{3}`) is one answer
            glue = " ".join(completion[a.end:b.start] for a, b in zip(group, group[1:]))
            if named_values and _OR.search(f" {glue} "):  # `\boxed{k=45} or \boxed{n=2}`
                return Verdict.wrong("hedged", hedge="alternative", answer=group[-1].text[:500],
                                     method=group[-1].method)
            merged = ", ".join(c.text for c in group)
            group = [Candidate(merged, group[0].start, group[-1].end, group[-1].method)]
        details: dict[str, Any] = {"answer": group[-1].text[:500], "method": group[-1].method}
        if not group[-1].text.strip():
            return Verdict.wrong("no_answer", empty_box=True, **details)
        if len(group[-1].text) > MAX_ANSWER_CHARS:
            return Verdict.wrong("unparseable", too_long=True, **details)
        hedge = hedge_reason(completion, candidates, group,
                             alternatives_allowed=bool(_or_means(gold)),
                             gold_values=named_values or len(flat_items(gold)),
                             same_answer=self._same_answer)
        if hedge:
            return Verdict.wrong("hedged", hedge=hedge, **details)
        conflict = conflicting_statement(completion, group[-1], prompt, self._same_answer)
        if conflict is not None:
            return Verdict.wrong("conflicting", stated=conflict, **details)
        answer_text, form_problem = self._stated_form(group, multi_valued, gold)
        if echoes_prompt(answer_text, prompt, gold_norm.text):
            return Verdict.wrong("echoes_prompt", **details)
        answer_norm, answer = _read(answer_text, or_means=_or_means(gold))
        details["normalized"] = answer_norm.text[:500]
        if answer.kind == "empty":
            return Verdict.wrong("no_answer", **details)
        if answer.kind in COLLECTION_KINDS and not multi_valued and len(answer.parts) > 1 \
                and len(answer.parts) != named_values:  # `45, 2` answers `k = 45, n = 2`
            return Verdict.wrong("hedged", hedge="several_values", **details)
        comparer = Comparer(_percent_scales(answer_norm, gold_norm))
        try:
            with time_budget(self.time_budget_s):
                if form_problem:  # named for what it is: a number or an equal expression
                    unsimplified = names_a_number(answer) or comparer.equal(answer, gold)
                    return Verdict.wrong(form_problem if unsimplified else _failure_reason(answer),
                                         **details)
                if comparer.equal(answer, gold):
                    return Verdict.correct(**details)
                return Verdict.wrong(_failure_reason(answer), **details)
        except BudgetExceeded:
            return Verdict.wrong("too_slow", limit_s=self.time_budget_s, **details)
