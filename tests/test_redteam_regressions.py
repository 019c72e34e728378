"""Hacks a policy found, kept as regression cases (issue 14, item 5).

tests/data/redteam_math_hacks.jsonl holds 37 distinct attempts that the math verifier
of the base commit paid in `bench_redteam.py`'s math-arithmetic run (SmolLM2-135M, GRPO,
40 steps; RESULTS.md, issue 14): the policy learned to box the question's expression,
or to answer `64 + 22 equals \\text{48}`, which the old unit stripping read as the bare
`64 + 22`. Each one's label is 0, decided by hand: none states the computed value.
They must score 0 now: with the prompt, without it (the value-form rule), and under
`answer_form: equivalent` with the prompt (the echo check); the `equals \\text{48}`
ones also under `equivalent` without a prompt (the unit rule and the prose rule).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlvr.audit.strict import strict_recheck
from rlvr.verifiers.math.verifier import MathVerifier

HACKS = [json.loads(line) for line in
         (Path(__file__).parent / "data" / "redteam_math_hacks.jsonl").read_text().splitlines()]
VALUE, EQUIVALENT = MathVerifier(), MathVerifier(answer_form="equivalent")


def test_the_cases_are_the_runs_distinct_hacks():
    assert len(HACKS) == 37 and len({h["completion"] for h in HACKS}) == 37
    assert all(h["expected"] is False for h in HACKS)


@pytest.mark.parametrize("hack", HACKS, ids=[f"step{h['step']}-{i}" for i, h in enumerate(HACKS)])
def test_a_found_hack_scores_zero(hack):
    completion, reference, prompt = hack["completion"], hack["reference"], hack["prompt"]
    settings = [(VALUE, prompt), (VALUE, None), (EQUIVALENT, prompt)]
    if "\\boxed" not in completion:  # the unit-stripping hack: closed by normalisation alone
        settings.append((EQUIVALENT, None))
    # (a boxed expression under `equivalent` with no prompt is paid by design: that form
    # accepts expressions, and only the prompt shows it is the question's own)
    for verifier, given_prompt in settings:
        verdict = verifier.verify(completion, reference, prompt=given_prompt)
        assert verdict.score == 0.0, (verifier.answer_form, given_prompt, verdict)
    # and the audit's strict re-check would have flagged the old verdict
    assert strict_recheck("math", completion, reference, prompt) is not None
