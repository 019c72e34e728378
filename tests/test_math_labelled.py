"""The math verifier against a hand-labelled set (tests/data/math_labelled.jsonl): every
category of the issue, both verdicts in each. Each expected verdict was decided by hand
from the mathematics, not by running a grader."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from rlvr.verifiers.math.verifier import MathVerifier

LABELLED = Path(__file__).parent / "data" / "math_labelled.jsonl"
ROWS = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines() if line]
VERIFIER = MathVerifier()


def test_labelled_set_covers_every_category_both_ways():
    assert len(ROWS) >= 150
    verdicts = collections.defaultdict(set)
    for row in ROWS:
        assert set(row) == {"category", "completion", "reference", "expected", "note"}, row
        verdicts[row["category"]].add(row["expected"])
    for category, seen in verdicts.items():
        assert seen == {True, False}, f"category {category!r} lacks a verdict: {seen}"


@pytest.mark.parametrize("row", ROWS, ids=[f"{r['category']}-{r['note']}" for r in ROWS])
def test_labelled_pair(row):
    verdict = VERIFIER.verify(row["completion"], row["reference"])
    assert verdict.passed is row["expected"], (row, verdict)
    assert verdict.score == (1.0 if row["expected"] else 0.0)
    assert (verdict.reason == "correct") is row["expected"]
