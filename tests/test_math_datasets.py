"""Dataset-wide checks on the shared evaluation data, run through VerifierPool (both
cores): every gold answer verifies against itself in the forms a model writes it, every
gold parses, and a deterministic sample of pairs of different answers does not verify."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from rlvr.verifiers import Case, VerifierPool
from rlvr.verifiers.math.expressions import parse_expression
from rlvr.verifiers.math.verifier import _leaves, _read


def _jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(workers=2, preload=["math"]) as p:
        yield p


@pytest.fixture(scope="module")
def math500(shared_data) -> list[str]:
    return [row["answer"] for row in _jsonl(shared_data / "math500" / "test.jsonl")]


@pytest.fixture(scope="module")
def gsm8k(shared_data) -> list[dict]:
    return _jsonl(shared_data / "gsm8k" / "test.jsonl")


def _failures(pool: VerifierPool, cases: list[Case], expected: bool) -> list[tuple]:
    verdicts = pool.verify(cases)
    return [(c.completion, c.reference, v.reason) for c, v in zip(cases, verdicts)
            if v.passed is not expected]


def test_every_math500_answer_verifies_against_itself_boxed(pool, math500):
    assert len(math500) == 500
    cases = [Case("math", f"Putting it together, the answer is $\\boxed{{{a}}}$.", a) for a in math500]
    cases += [Case("math", f"The final answer is ${a}$. I hope it is correct.", a) for a in math500]
    assert _failures(pool, cases, True) == []


def test_math500_answers_verify_when_written_differently(pool, math500):
    """Value-preserving rewrites a model makes: `\\dfrac`, `\\displaystyle`, `\\left(`
    ... `\\right)`, and inline math after `Answer:`."""
    def rewrite(answer: str) -> str:
        text = answer.replace("\\frac", "\\dfrac")
        if text.startswith("(") and text.endswith(")"):
            text = "\\left(" + text[1:-1] + "\\right)"
        return "\\displaystyle " + text
    cases = [Case("math", f"Answer: ${rewrite(a)}$", a) for a in math500]
    assert _failures(pool, cases, True) == []


def test_every_math500_gold_parses(math500):
    """Not just string-equal to itself: each expression inside each gold parses, so a
    differently written correct answer can be compared."""
    unparsed = [(a, leaf.text) for a in math500 for leaf in _leaves(_read(a)[1])
                if leaf.kind == "expr" and parse_expression(leaf.text) is None]
    assert unparsed == []


def test_every_gsm8k_answer_verifies_as_marker_and_boxed(pool, gsm8k):
    assert len(gsm8k) == 1319
    cases = []
    for row in gsm8k:
        gold = row["answer"].split("####")[-1].strip()
        cases.append(Case("math", row["answer"], gold))  # the full worked solution
        cases.append(Case("math", f"#### {gold}", gold))
        cases.append(Case("math", f"So the total is $\\boxed{{{gold}}}$.", gold))
        plain = int(gold.replace(",", ""))
        cases.append(Case("math", f"The answer is $\\boxed{{\\${plain:,}}}$.", gold))  # \$1,600
    assert _failures(pool, cases, True) == []


def _plainly_same(a: str, b: str) -> bool:
    """Independent of the verifier: answers equal after dropping markup and units."""
    def strip(s: str) -> str:
        s = re.sub(r"\\text\{[^}]*\}|\\mbox\{[^}]*\}|\^\\circ|\\%|\\\$|\s|\\!|,", "", s)
        return s.replace("\\dfrac", "\\frac")
    return strip(a) == strip(b)


def test_different_math500_answers_do_not_verify(pool, math500):
    rng = random.Random(2)
    cases = []
    while len(cases) < 600:
        i, j = rng.sample(range(len(math500)), 2)
        a, b = math500[i], math500[j]
        if not _plainly_same(a, b):
            cases.append(Case("math", f"so $\\boxed{{{a}}}$", b))
    assert _failures(pool, cases, False) == []


def test_different_gsm8k_answers_do_not_verify(pool, gsm8k):
    golds = sorted({row["answer"].split("####")[-1].strip().replace(",", "") for row in gsm8k},
                   key=int)
    # neighbours in sorted order: the closest different values (21 vs 22, 1000 vs 1050)
    cases = [Case("math", f"#### {a}", b) for a, b in zip(golds, golds[1:])]
    cases += [Case("math", f"$\\boxed{{{b}}}$", a) for a, b in zip(golds, golds[1:])]
    assert len(cases) > 500
    assert _failures(pool, cases, False) == []
