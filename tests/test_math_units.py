"""Unit tests of the math verifier's steps, each against hand-written expectations."""

from __future__ import annotations

import json

import pytest
import sympy

from cli_helpers import run_cli
from rlvr.verifiers import get_verifier
from rlvr.verifiers.math.expressions import parse_expression
from rlvr.verifiers.math.extraction import answer_candidates, boxed_candidates, last_number
from rlvr.verifiers.math.normalize import normalize
from rlvr.verifiers.math.safety import TooLarge, safe_evaluate
from rlvr.verifiers.math.structure import parse_shape, split_top_level
from rlvr.verifiers.math.verifier import MathVerifier


@pytest.mark.parametrize("text,boxes", [
    (r"\boxed{1} and \boxed{\frac{1}{2}}", ["1", r"\frac{1}{2}"]),
    (r"\boxed{\boxed{7}}", ["7"]),
    (r"\boxed{\{1, 2\}}", [r"\{1, 2\}"]),  # escaped braces do not close the box
    (r"\fbox{3} \boxed {4}", ["3", "4"]),
    (r"\boxed{5", []),
    ("no box", []),
])
def test_boxed_candidates(text, boxes):
    assert [c.text for c in boxed_candidates(text)] == boxes


@pytest.mark.parametrize("text,answers", [
    ("work\n#### 72", ["72"]),
    ("Answer: $\\frac{1}{2}$.", ["\\frac{1}{2}"]),
    ("The final answer is $\\$32$. I hope it is correct.", ["\\$32"]),
    ("The final answer is 12. Done.", ["12"]),
    ("The final answer is $\\boxed{4}$.", ["4"]),  # the box, not the marker line
])
def test_answer_candidates(text, answers):
    assert [c.text for c in answer_candidates(text)] == answers


def test_last_number():
    assert last_number("1 then 2,500 apples.").text == "2,500"
    assert last_number("none") is None


@pytest.mark.parametrize("raw,text,percent,degrees", [
    ("1{,}000", "1000", False, False), ("1,\\!000,\\!000", "1000000", False, False),
    ("$\\dfrac{1}{2}$", "\\frac{1}{2}", False, False), ("25\\%", "25", True, False),
    ("30^\\circ", "30", False, True), ("\u22125", "-5", False, False),
    ("15\\mbox{ cm}^2", "15", False, False), ("\\$18.90", "18.90", False, False),
    ("1.2e-4", "1.2\\times 10^{-4}", False, False), ("\\text{Evelyn}", "\\text{Evelyn}", False, False),
    ("10,100,1000", "10,100,1000", False, False),  # a list, not thousands
    ("2 \\text{ or } 3", "2 \\text{ or } 3", False, False),  # kept for the hedging check
])
def test_normalize(raw, text, percent, degrees):
    result = normalize(raw)
    assert (result.text, result.percent, result.degrees) == (text, percent, degrees)


@pytest.mark.parametrize("text,kind,detail", [
    ("(3,4]", "ordered", "(]"), ("\\{1,2\\}", "set", ""), ("1, 2", "list", ""),
    ("(0,9) \\cup (9,36)", "union", ""), ("x = 3", "relation", ""),
    ("\\text{(C)}", "choice", "C"), ("\\text{Navin}", "text", "navin"),
    ("204_5", "base", "204"), ("1 \\pm 2", "list", ""), ("-2 \\le x < 7", "ordered", "[)"),
    ("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}", "matrix", ""), ("2x+1", "expr", "2x+1"),
])
def test_parse_shape(text, kind, detail):
    shape = parse_shape(text)
    assert shape.kind == kind
    assert detail in (shape.brackets + shape.text)


def test_matrix_shape_has_rows_and_cells():
    shape = parse_shape("\\begin{pmatrix} 1 & 2 \\\\ 3 & 4 \\end{pmatrix}")
    assert [[cell.text for cell in row.parts] for row in shape.parts] == [["1", "2"], ["3", "4"]]


def test_split_top_level_respects_brackets():
    assert split_top_level("(1,2), \\{3,4\\}, 5", ",") == ["(1,2)", "\\{3,4\\}", "5"]


def test_decimals_parse_as_exact_fractions():
    assert parse_expression("0.33").value == sympy.Rational(33, 100)
    assert parse_expression("1.2\\times 10^{-4}").value == sympy.Rational(3, 25000)
    assert parse_expression("\\frac9{19}").value == sympy.Rational(9, 19)


def test_safe_evaluate_refuses_towers_but_computes_big_exact_powers():
    tower = sympy.Pow(9, sympy.Pow(9, sympy.Pow(9, 9, evaluate=False), evaluate=False), evaluate=False)
    with pytest.raises(TooLarge):
        safe_evaluate(tower)
    with pytest.raises(TooLarge):
        safe_evaluate(sympy.factorial(sympy.factorial(10, evaluate=False), evaluate=False))
    assert safe_evaluate(sympy.Pow(2, 100, evaluate=False)) == 2 ** 100


def test_registry_builds_the_math_verifier_with_options():
    assert isinstance(get_verifier("math"), MathVerifier)
    assert get_verifier("math", fallback="last_number").fallback == "last_number"


def test_numeric_references_are_accepted():
    assert MathVerifier().verify("\\boxed{27}", 27.0).passed  # AMC23 stores floats
    assert MathVerifier().verify("\\boxed{0.5}", 0.5).passed
    assert MathVerifier().verify("#### 18", 18).passed


def test_cli_one_off_prints_the_math_verdict():
    result = run_cli("verify", "math", "--reference", "\\frac12", "--completion", "so \\boxed{0.5}")
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert (verdict["passed"], verdict["reason"], verdict["details"]["answer"]) == (True, "correct", "0.5")


def test_cli_batch_with_math_lines(tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"verifier": "math", "completion": c, "reference": r}) + "\n"
                             for c, r in [("\\boxed{25\\%}", "0.25"), ("\\boxed{200}", "2"),
                                          ("\\boxed{2} or \\boxed{3}", "2"), ("x", "")]))
    result = run_cli("verify", "--input", str(cases), "--workers", "2")
    assert result.returncode == 1  # the empty reference is a data error, after the rest
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line.get("reason") for line in lines[:3]] == ["correct", "wrong_answer", "hedged"]
    assert lines[3]["score"] is None and "empty" in lines[3]["error"]


def test_a_boxed_gold_is_the_same_gold():
    assert MathVerifier().verify("\\boxed{5}", "$\\boxed{5}$").passed
    assert not MathVerifier().verify("\\boxed{6}", "\\boxed{5}").passed


@pytest.mark.parametrize("completion,passed,reason", [
    ("42", True, "correct"), ("x = 42", True, "correct"), ("42 apples", True, "correct"),
    ("$42$.", True, "correct"), ("43", False, "wrong_answer"), ("42 or 43", False, "hedged"),
    ("Adding everything gives 42 apples and more", False, "no_answer"),  # prose is not an answer
    ("Adding everything gives 42 apples.", True, "correct"),  # a closing sentence commits to its one number
    ("42\n43", False, "no_answer"),
])
def test_a_bare_answer_is_its_own_answer(completion, passed, reason):
    verdict = MathVerifier().verify(completion, "42")
    assert (verdict.passed, verdict.reason) == (passed, reason)


def test_r1_math_grades_the_answer_block_with_the_math_verifier():
    r1 = get_verifier("r1_math")
    assert r1.verify("<think>half of one</think>\n<answer>\\frac{1}{2}</answer>", "0.5").score == 1.0
    assert r1.verify("<think>half of one</think>\n<answer>\\boxed{0.5}</answer>", "0.5").score == 1.0
    assert r1.verify("<think>hmm</think>\n<answer>0.5 or 2</answer>", "0.5").score == 0.0
    assert r1.verify("<think>hmm</think>\n<answer>0.25</answer>", "0.5").score == 0.0
