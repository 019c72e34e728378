"""reasoning-gym's tasks as rlvr records graded by its own scorers: Countdown answers
checked against an independent evaluation of the expression, model text that is not
plain arithmetic kept away from Countdown's expression parser, and the records loaded
and graded through rlvr's own data loader and verifier pool."""

from __future__ import annotations

import ast
import operator

import pytest

rg_module = pytest.importorskip("reasoning_gym", reason="reasoning-gym is not installed "
                                "(pip install 'rlvr[reasoning-gym]')")

from rlvr.environments.ecosystem import reasoning_gym as rg  # noqa: E402

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv}


def _evaluate(text: str) -> float:
    """Arithmetic by walking the syntax tree (an evaluation independent of sympy)."""
    def walk(node):
        if isinstance(node, ast.BinOp):
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return -walk(node.operand)
        assert isinstance(node, ast.Constant)
        return node.value
    return walk(ast.parse(text, mode="eval").body)


@pytest.fixture(scope="module")
def countdown():
    return rg.records("countdown", 20, seed=3)


def test_countdown_records_are_seeded_and_self_describing(countdown):
    again = rg.records("countdown", 20, seed=3)
    assert [r.reference for r in again] == [r.reference for r in countdown]
    assert [r.id for r in countdown] == [f"rg-countdown-3-{i}" for i in range(20)]
    first = countdown[0]
    assert first.prompt.startswith(first.reference["entry"]["question"].rstrip())
    assert first.prompt.endswith(rg.ANSWER_LINE) and first.verifier == rg.VERIFIER


def test_countdown_scores_agree_with_an_independent_evaluation(countdown):
    verifier = rg.ReasoningGymVerifier()
    for record in countdown:
        meta = record.reference["entry"]["metadata"]
        solution = record.reference["entry"]["answer"]
        assert _evaluate(solution) == pytest.approx(meta["target"])  # the generator's own
        verdict = verifier.verify(f"think... <answer>{solution}</answer>", record.reference)
        assert (verdict.score, verdict.passed) == (1.0, True)
        # every number used once, but a different value: the scorer's 0.05 format credit
        swapped = " + ".join(str(n) for n in meta["numbers"])
        expected_pass = _evaluate(swapped) == meta["target"]
        verdict = verifier.verify(f"<answer>{swapped}</answer>", record.reference)
        assert verdict.passed is expected_pass
        assert verdict.score == (1.0 if expected_pass else 0.05)


def test_only_plain_arithmetic_reaches_countdowns_parser(countdown, monkeypatch):
    def must_not_run(name):
        raise AssertionError("the scorer saw model text that is not arithmetic")

    monkeypatch.setattr(rg_module, "get_score_answer_fn", must_not_run)
    verifier = rg.ReasoningGymVerifier()
    for hostile in ("__import__('os').system('true')", "(lambda: 1)()", "1" * 300):
        verdict = verifier.verify(f"<answer>{hostile}</answer>", countdown[0].reference)
        assert (verdict.passed, verdict.reason) == (False, "answer_not_accepted")
    assert verifier.verify("no tags at all", countdown[0].reference).reason == "no_answer"


def test_the_last_answer_block_counts():
    assert rg.extract_answer("<answer>1</answer> then <answer> 2 </answer>") == "2"
    assert rg.extract_answer("<answer>unclosed") is None


def test_chain_sum_and_bad_references():
    record = rg.records("chain_sum", 1, seed=0)[0]
    gold = record.reference["entry"]["answer"]
    verifier = rg.ReasoningGymVerifier()
    assert verifier.verify(f"<answer>{gold}</answer>", record.reference).passed
    assert not verifier.verify(f"<answer>{int(gold) + 1}</answer>", record.reference).passed
    from rlvr.verifiers.base import InvalidReference
    with pytest.raises(InvalidReference):
        verifier.check_reference({"dataset": "arc_agi", "entry": {}})
    with pytest.raises(ValueError, match="not supported"):
        rg.records("arc_agi", 1, seed=0)


def test_records_load_and_grade_through_rlvr(tmp_path, countdown):
    """Written as a data file, read by rlvr's loader (the plugin listed, as the operator
    would in reward.plugins), graded in rlvr's verifier pool."""
    from rlvr.data.loading import FieldMapping, load_records
    from rlvr.verifiers.pool import Case, VerifierPool
    from rlvr.verifiers.registry import add_plugins

    add_plugins([rg.VERIFIER])
    path = tmp_path / "countdown.jsonl"
    rg.write_jsonl(countdown[:3], path)
    loaded = load_records(path, FieldMapping(id="id"))
    assert [(r.id, r.reference) for r in loaded] == [(r.id, r.reference) for r in countdown[:3]]
    cases = [Case(r.verifier, f"<answer>{r.reference['entry']['answer']}</answer>", r.reference)
             for r in loaded] + [Case(loaded[0].verifier, "<answer>1+1</answer>",
                                      loaded[0].reference)]
    with VerifierPool(workers=1, plugins=[rg.VERIFIER]) as pool:
        scores = [v.score for v in pool.verify(cases)]
    assert scores == [1.0, 1.0, 1.0, 0.05]
