"""The trainer's held-out evaluation grades exactly as its rewards do: with
reward.verifier and reward.options (a composite's components) when they are set."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rlvr.data.prompts import PromptRenderer
from rlvr.data.records import TaskRecord
from rlvr.training.evaluate import evaluate
from rlvr.verifiers.pool import VerifierPool

from eval_helpers import ScriptedEngine

RECORDS = [TaskRecord("1+1", "2", "exact", "p1"), TaskRecord("2+2", "4", "exact", "p2")]
ENGINE = ScriptedEngine(greedy={"1+1": "Answer: 2", "2+2": "Answer: 5"})
RENDERER = PromptRenderer(SimpleNamespace(bos_token=""), "plain", "{prompt}")


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(workers=1) as p:
        yield p


def test_composite_override_is_graded_with_its_components(pool):
    # One component: "exact" at weight 1, so the composite passes p1 and fails p2.
    options = {"components": [{"verifier": "exact", "name": "answer"}]}
    result = evaluate(ENGINE, RENDERER, pool, RECORDS, max_new_tokens=8,
                      verifier="composite", options=options)
    assert result["accuracy"] == pytest.approx(0.5)
    assert [e["passed"] for e in result["examples"]] == [True, False]


def test_records_keep_their_own_verifier_and_options_without_an_override(pool):
    result = evaluate(ENGINE, RENDERER, pool, RECORDS, max_new_tokens=8)
    assert result["accuracy"] == pytest.approx(0.5) and result["n"] == 2
