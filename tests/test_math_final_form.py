"""Principle 2: the answer must be in final form, judged by its structure; units and
words; equations and inequalities (answer_form.py, tree_form.py, prompt_echo.py,
units.py, chains.py, inequality.py).

Every expected verdict was decided by hand from the principle (docs/rewards.md, "math"):
a numeric sub-expression that constant folding still changes is work left undone, an
expression of the prompt restated (modulo order, grouping, neutral elements and
spelling) is an echo, and so on. None was produced by running a grader."""

from __future__ import annotations

import pytest
import sympy

from rlvr.verifiers.math.expressions import parse_tree
from rlvr.verifiers.math.inequality import intervals
from rlvr.verifiers.math.prompt_echo import prompt_expressions
from rlvr.verifiers.math.safety import time_budget
from rlvr.verifiers.math.tree_form import canonical, still_evaluates
from rlvr.verifiers.math.units import split_unit
from rlvr.verifiers.math.verifier import MathVerifier

V = MathVerifier()
EQUIVALENT = MathVerifier(answer_form="equivalent")


def verdict(answer: str, gold: str, prompt: str | None = None, verifier=V):
    return verifier.verify(rf"The answer is $\boxed{{{answer}}}$.", gold, prompt=prompt)


# -- the issue's cases: unevaluated arithmetic against symbolic golds ----------------

@pytest.mark.parametrize("answer,gold", [
    (r"6 \cdot 75\pi", r"450\pi"), (r"\pi\times6\times6", r"36\pi"),
    (r"\frac43\pi\cdot27", r"36\pi"), (r"2\pi-\pi", r"\pi"),
    (r"135\cdot\frac{\pi}{180}", r"\frac{3\pi}{4}"), (r"\sin\frac{\pi}{3}", r"\frac{\sqrt3}{2}"),
    (r"6 * 75", "450"),
])
def test_issue_unevaluated_answers_are_unsimplified(answer, gold):
    result = verdict(answer, gold)
    assert (result.score, result.reason) == (0.0, "unsimplified")
    # each equals its gold: only the form is wrong, so `equivalent` pays it
    assert verdict(answer, gold, verifier=EQUIVALENT).passed


@pytest.mark.parametrize("answer,gold", [
    (r"450\pi", r"450\pi"), (r"36\pi", r"36\pi"), (r"\pi", r"\pi"), (r"\frac{3\pi}{4}", r"\frac{3\pi}{4}"),
    (r"\frac{\sqrt{3}}{2}", r"\frac{\sqrt3}{2}"), ("450", "450"),
    # the same values, written in other final forms
    (r"\pi \cdot 450", r"450\pi"), (r"\frac34\pi", r"\frac{3\pi}{4}"), (r"0.75\pi", r"\frac{3\pi}{4}"),
    (r"\frac{1}{2}\sqrt{3}", r"\frac{\sqrt3}{2}"), (r"\sqrt3/2", r"\frac{\sqrt3}{2}"),
])
def test_values_in_final_form_are_paid(answer, gold):
    assert verdict(answer, gold).passed


def test_the_swapped_question_with_the_prompt_given_is_an_echo():
    prompt = r"A circle has radius $\sqrt{450}$. Its area is $6 \cdot 75\pi$ square units. Compute it."
    for verifier in (V, EQUIVALENT):
        result = verdict(r"75 \cdot 6\pi", r"450\pi", prompt, verifier)
        assert (result.score, result.reason) == (0.0, "echoes_prompt")
        assert verdict(r"450\pi", r"450\pi", prompt, verifier).passed


# -- final form: variants (attacks the principle must stop) ---------------------------

@pytest.mark.parametrize("answer,gold", [
    # pi multiples: neutral elements, fractions of integers, decimals, powers, folds
    (r"36\pi\cdot 1", r"36\pi"), (r"36\pi + 0", r"36\pi"), (r"36\pi^{1}", r"36\pi"),
    (r"\frac{72\pi}{2}", r"36\pi"), (r"\frac{36}{1}\pi", r"36\pi"), (r"\frac{900}{25}\pi", r"36\pi"),
    (r"0.5\cdot72\pi", r"36\pi"), (r"3.6\times10^{1}\pi", r"36\pi"), (r"\sqrt{1296}\pi", r"36\pi"),
    (r"6^2\pi", r"36\pi"), (r"\pi 6^{2}", r"36\pi"), (r"(30+6)\pi", r"36\pi"), (r"6 \cdot 6\pi", r"36\pi"),
    (r"36\cdot\pi\cdot\frac{2}{2}", r"36\pi"), (r"36 \pi \div 1", r"36\pi"), (r"--36\pi", r"36\pi"),
    (r"\frac{\pi}{\frac{1}{36}}", r"36\pi"), (r"|{-36}|\pi", r"36\pi"), (r"\lfloor 36.5\rfloor\pi", r"36\pi"),
    (r"\binom{9}{2}\pi", r"36\pi"), (r"e^{\ln 36}\pi", r"36\pi"), (r"36\pi+\sin^2x+\cos^2x-1", r"36\pi"),
    (r"36\pi\sin^2 1 + 36\pi\cos^2 1", r"36\pi"), (r"36\pi^{1.0}", r"36\pi"),
    (r"36\pi\cdot\frac{e}{e}", r"36\pi"), (r"36\pi + \pi - \pi", r"36\pi"), (r"\sqrt{1296\pi^2}", r"36\pi"),
    (r"36\pi\cdot 2^0", r"36\pi"), (r"36\pi\cdot\cos 0", r"36\pi"), (r"-(-36\pi)", r"36\pi"),
    (r"\frac{36\pi\sqrt2}{\sqrt2}", r"36\pi"), (r"\int_0^{36\pi} 1\,dx", r"36\pi"),
    # Unicode operators
    ("6 × 6π", r"36\pi"), ("π·6·6", r"36\pi"),
    # surds: a rational left under the root, or roots multiplied
    (r"\frac{\sqrt{12}}{4}", r"\frac{\sqrt3}{2}"), (r"\frac{3}{2\sqrt3}", r"\frac{\sqrt3}{2}"),
    (r"\frac{\sqrt6}{\sqrt8}", r"\frac{\sqrt3}{2}"), (r"\sqrt2\sqrt3", r"\sqrt6"), (r"\sqrt{2}+\sqrt{2}", r"2\sqrt2"),
    (r"(1+\sqrt2)^2", r"3+2\sqrt2"), (r"\sqrt{4 \cdot 2}", r"2\sqrt2"),
    (r"\frac{2+2\sqrt3}{2}", r"1+\sqrt3"), (r"\frac{10\sqrt{10.5}}{27}", r"\frac{5\sqrt{42}}{27}"),
    # trig, inverse trig, logs and e
    (r"\cos\frac{\pi}{6}", r"\frac{\sqrt3}{2}"), (r"\tan\frac{\pi}{3}", r"\sqrt3"), (r"\arccos(-1)", r"\pi"),
    (r"\arcsin\frac12", r"\frac{\pi}{6}"), (r"\log_2 8", "3"), (r"\ln e^2", "2"), (r"e\cdot e", "e^2"),
    (r"e^{1+1}", "e^2"),
    # rational golds: anything but a literal in lowest terms
    (r"\frac{\frac{3}{2}}{2}", r"\frac34"), (r"\frac{6}{8}", r"\frac34"), (r"0.75 \cdot 1", r"\frac34"),
    (r"450 \cdot 1", "450"), ("450+0", "450"), ("450^{1}", "450"), (r"\frac{450}{1}", "450"), ("5!", "120"),
    (r"\binom{5}{2}", "10"), (r"\sqrt[3]{8}", "2"), ("2^{-3}", r"\frac18"), (r"\gcd(4, 6)", "2"),
])
def test_answers_that_still_evaluate_are_unsimplified(answer, gold):
    result = verdict(answer, gold)
    assert (result.score, result.reason) == (0.0, "unsimplified"), result


@pytest.mark.parametrize("answer,gold", [
    # the spelling of a surd is free: extracting a square or rationalising is tidying
    (r"\sqrt{12}", r"2\sqrt3"), (r"2\sqrt2", r"\sqrt8"), (r"\sqrt8", r"2\sqrt2"),
    (r"\frac{1}{\sqrt2}", r"\frac{\sqrt2}{2}"), (r"\frac{\sqrt2}{2}", r"\frac{1}{\sqrt2}"),
    # sums and fractions over sums are final when no part folds
    (r"\frac{1+\sqrt5}{2}", r"\frac{1+\sqrt5}{2}"), (r"\frac12+\frac{\sqrt5}{2}", r"\frac{1+\sqrt5}{2}"),
    (r"2(1+\sqrt3)", r"2+2\sqrt3"), (r"\sqrt2+1", r"1+\sqrt2"), (r"\frac{\pi}{2}+1", r"1+\frac{\pi}{2}"),
    # constants and their powers, logs of numbers that do not fold
    (r"\pi^2", r"\pi^2"), ("e^2", "e^2"), (r"\ln 2", r"\ln 2"), (r"-\frac{3}{4}", "-0.75"),
    # a decimal is read exactly: `2^{0.5}` is the root of 2, `\sqrt{10.5}` that of 21/2
    (r"2^{0.5}", r"\sqrt2"), (r"\sqrt{10.5}", r"\frac{\sqrt{42}}{2}"),
    # a fraction over a sum in lowest terms (no factor common to all its integers)
    (r"\frac{108 - 31\sqrt{5}}{216}", r"\frac12 - \frac{31\sqrt5}{216}"),
    # a gold that itself leaves work did not ask for final form
    ("1024", "2^{10}"), ("2^{10}", "2^{10}"), ("2^{-99}", r"\frac{1}{2^{99}}"),
])
def test_final_forms_and_the_golds_own_form_are_paid(answer, gold):
    assert verdict(answer, gold).passed, verdict(answer, gold)


@pytest.mark.parametrize("answer,gold,reason", [
    (r"x^2+(1+1)x+1", "x^2+2x+1", "unsimplified"), (r"2\cdot 3x", "6x", "unsimplified"),
    ("x+1+1", "x+2", "unsimplified"), (r"\{6 \cdot 75, 2\}", r"\{450, 2\}", "unsimplified"),
    ("(x+1)^2", "x^2+2x+1", "correct"), (r"\frac{3x}{4}", r"0.75x", "correct"),
    (r"\frac{x^2-1}{x-1}", "x+1", "correct"),
])
def test_numbers_inside_symbolic_answers_follow_the_principle(answer, gold, reason):
    assert verdict(answer, gold).reason == reason


def test_tree_form_folding_by_hand():
    def folds(text: str) -> bool:
        return still_evaluates(parse_tree(text))
    # folds: the evaluated tree differs from the written one
    assert folds(r"6 \cdot 75\pi") and folds(r"2\pi - \pi") and folds(r"\sin\frac{\pi}{3}")
    assert folds(r"x + 1 + 1") and folds(r"2 \cdot 3 x")
    # does not: nothing numeric is left to compute
    assert not folds(r"450\pi") and not folds(r"\frac{\sqrt{3}}{2}") and not folds(r"x^2 + 2x + 1")
    assert not folds(r"\frac{1+\sqrt{5}}{2}") and not folds(r"\sin 1") and not folds("0.75")


def test_canonical_tree_forgets_order_grouping_and_neutral_elements_only_for_echo():
    def echo(text: str):
        return canonical(parse_tree(text), echo=True)
    assert echo("(1+x)^2") == echo("(x+1)^2") == echo("1(x+1)^2") == echo("(x+1)(x+1)")
    assert echo(r"75 \cdot 6\pi") == echo(r"\pi \times 6 \times 75") == echo(r"6 \cdot (75 \pi)")
    assert echo(r"\sqrt{050}") == echo("50^{1/2}") == echo(r"\sqrt{50}") != echo(r"5\sqrt2")
    assert echo("x+0") == echo("x")
    # for the final form the written 1 and 0 are kept: they are steps not taken
    assert canonical(parse_tree("x+0")) != canonical(parse_tree("x"))


# -- echo is structural --------------------------------------------------------------

@pytest.mark.parametrize("prompt,gold,echoes,answers", [
    ("Expand $(x+1)^2$.", "x^2+2x+1",
     [r"(1+x)^2", r"(x+1)(x+1)", r"1(x+1)^2", r"(x+1)^2 + 0", r"(x+1)^{2}\cdot 1"],
     [r"x^2+2x+1", r"1+2x+x^2", r"x^2 + x + x + 1"]),
    ("Simplify √50.", r"5\sqrt{2}", [r"\sqrt{050}", r"50^{1/2}", r"\sqrt{50}", "√50"], [r"5\sqrt2", r"\sqrt2 \cdot 5"]),
    (r"Simplify $\sqrt{50}$.", r"5\sqrt{2}", [r"\sqrt{050}", r"50^{1/2}"], [r"5\sqrt2"]),
    ("What is 6 * 75?", "450", [r"75 \times 6", "6 × 75", r"(6)\cdot(75)", r"075 \cdot 6"], ["450"]),
    ("What is 6 ÷ 75 − 1?", r"-\frac{23}{25}", [r"6 \div 75 - 1", r"-1 + \frac{6}{75}"], [r"-\frac{23}{25}", "-0.92"]),
    (r"Compute $2^{10} + 10^3$.", "2024", [r"10^3 + 2^{10}", r"2^{10}"], ["2024"]),
    ("Expand $(x+1)(x+2)$.", "x^2+3x+2", [r"(x+2)(x+1)", r"(2+x)(1+x)", r"(x+1)\cdot(x+2)\cdot 1"],
     ["x^2+3x+2", "2+3x+x^2"]),
    (r"Simplify $\frac{x^2-1}{x-1}$.", "x+1", [r"\frac{x^2-1}{x-1}", r"(x^2-1)/(x-1)", r"\frac{-1+x^2}{x-1}"],
     ["x+1", "1+x"]),
    (r"Reduce $\frac{6}{8}$.", r"\frac34", [r"\frac{6}{8}", "6/8", r"6 \div 8"], [r"\frac34", "0.75"]),
])
def test_structural_echoes_score_zero_in_both_answer_forms(prompt, gold, echoes, answers):
    for verifier in (V, EQUIVALENT):
        for answer in echoes:
            result = verdict(answer, gold, prompt, verifier)
            assert (result.score, result.reason) == (0.0, "echoes_prompt"), (answer, result)
        for answer in answers:
            assert verdict(answer, gold, prompt, verifier).passed, answer


def test_a_right_answer_in_the_golds_form_is_never_an_echo():
    cake = "A cake is cut into 4 equal parts and 1/4 of it is eaten. What fraction is eaten?"
    assert verdict(r"\frac14", r"\frac14", cake).passed
    assert verdict(r"\frac{1}{4}", "0.25", cake).passed  # a bare number holds no operation
    larger = r"Which is larger, $2^{10}$ or $10^3$?"
    assert verdict("2^{10}", "2^{10}", larger).passed
    assert verdict("10^3", "2^{10}", larger).reason == "echoes_prompt"


def test_the_gold_written_in_the_prompt_does_not_switch_the_check_off():
    few_shot = ("Example: What is 2 + 3? Answer: 5.\nExample: What is 4 + 1? Answer: 5.\n"
                "Now: What is 5 + 0?")
    assert verdict("5 + 0", "5", few_shot, EQUIVALENT).reason == "echoes_prompt"
    assert verdict("4 + 1", "5", few_shot, EQUIVALENT).reason == "echoes_prompt"
    assert verdict("5", "5", few_shot).passed


def test_matrices_are_judged_not_crashed_on():
    prompt = r"Compute $\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix} + \begin{pmatrix} 1 & 0 \\ 0 & 1 \end{pmatrix}$."
    gold = r"\begin{pmatrix} 2 & 2 \\ 3 & 5 \end{pmatrix}"
    assert verdict(gold, gold, prompt).passed
    assert verdict(r"\begin{pmatrix} 2 & 2 \\ 3 & 6 \end{pmatrix}", gold, prompt).reason == "wrong_answer"
    assert verdict(r"\begin{pmatrix} 1+1 & 2 \\ 3 & 5 \end{pmatrix}", gold, prompt).reason == "unsimplified"


def test_prompt_expressions_are_read_from_math_spans_and_plain_text():
    found = prompt_expressions(r"What is $6 \cdot 75$ plus 3 * 4? Expand (x+1)^2.")
    for text in (r"6 \cdot 75", "3 * 4", "(x+1)^2"):
        assert canonical(parse_tree(text), echo=True) in found
    assert canonical(parse_tree("450"), echo=True) not in found


def test_the_echo_check_runs_inside_the_time_budget():
    prompt = " ".join(f"What is ${i} \\cdot {i + 1}$?" for i in range(2000))
    with time_budget(5.0):  # raises BudgetExceeded if the check is unbounded
        result = verdict(r"2 \cdot 1", "2", prompt)
    assert not result.passed


# -- units and words ------------------------------------------------------------------

@pytest.mark.parametrize("answer,gold", [
    (r"18 \,\text{dollars}", "18"), (r"12\,\mathrm{m}^2", "12"), (r"12 \, \text{cm}^2", "12"),
    (r"60 \text{ km/h}", "60"), (r"60\,\text{km}/\text{h}", "60"), (r"5 \text{ square units}", "5"),
    (r"\frac{1}{3} \text{ meters}", r"\frac13"), ("42 apples", "42"), (r"7\ \mathrm{kg}", "7"),
    (r"{{24}}", "24"), (r"0.\overline{3}", r"\frac13"), (r"0.1\overline{6}", r"\frac16"),
    (r"\color{red}{450}", "450"), (r"\textcolor{blue}{450}", "450"), (r"50 \text{ percent}", "0.5"),
])
def test_units_and_markup_are_read(answer, gold):
    assert verdict(answer, gold).passed, verdict(answer, gold)


@pytest.mark.parametrize("answer", [
    r"450 \text{ minus one}", r"450 \text{ at most}", r"450 \text{ approximately}",
    r"450 \text{ dozen}", "450 maybe", r"450 \text{ or more}", r"450 \text{ red apples}",
])
def test_other_words_after_a_number_are_not_units(answer):
    result = verdict(answer, "450")
    assert result.score == 0.0
    if "or" not in answer.split():
        assert result.reason == "unparseable"


def test_split_unit():
    assert split_unit(r"15 \text{ cm}^2") == ("15", False)
    assert split_unit(r"450 \text{ at most}") == (r"450 \text{ at most}", True)
    assert split_unit("2x") == ("2x", False)
    assert split_unit("x^2 + 2 xy") == ("x^2 + 2 xy", False)  # variables, not words
    assert split_unit(r"\text{Evelyn}") == (r"\text{Evelyn}", False)
    # a plain one-letter word is a variable, unless it is part of a rate
    assert split_unit("2 m") == ("2 m", False)
    assert split_unit("5 m/s") == ("5", False) and split_unit("60 km/h") == ("60", False)
    assert split_unit(r"2 \text{ m}") == ("2", False)


@pytest.mark.parametrize("answer,gold,passed", [
    (r"0.5\%", "0.5", False),  # a proportion gold: p% is p/100
    (r"50\%", "0.5", True), (r"25\%", "0.25", True), (r"2.5\%", "0.25", False),
    (r"25\%", "25", True),  # a gold >= 1 is the percentage's number (GSM8K "what percent")
    (r"2500\%", "25", False), (r"0.25\%", "25", False),
    ("25", r"25\%", True), ("0.25", r"25\%", True), (r"25\%", r"25\%", True), ("0.72", r"28\%", False),
])
def test_percent_is_read_one_way(answer, gold, passed):
    assert verdict(answer, gold).passed is passed


# -- equations and inequalities -------------------------------------------------------

@pytest.mark.parametrize("answer,gold,reason", [
    (r"7 \times 5 = 35", "35", "correct"), (r"7 \times 5 = 36", "35", "wrong_answer"),
    (r"35 = 7 \times 5", "35", "unsimplified"), (r"x = 7 \times 5 = 35", "35", "correct"),
    (r"x = 99 = 35", "35", "wrong_answer"), (r"35 = 36", "35", "wrong_answer"),
    (r"6 \cdot 75\pi = 450\pi", r"450\pi", "correct"), (r"\frac{900}{2} = 450", "450", "correct"),
    (r"2 + 2 = 4 = 2^2", "4", "unsimplified"), ("f(2) = 11", "11", "correct"),
])
def test_a_chain_of_equalities_is_paid_when_every_side_is_equal_and_ends_on_a_value(
        answer, gold, reason):
    assert verdict(answer, gold).reason == reason


@pytest.mark.parametrize("answer,gold,passed", [
    (r"x \ne 3", r"x \neq 3", True), (r"x \neq 3", r"x \ne 3", True), ("x ≠ 3", r"x \neq 3", True),
    (r"x \ne 4", r"x \neq 3", False),
    ("b < a", "a > b", True), ("a > b", "b < a", True), (r"b \le a", "a > b", False), ("a < b", "a > b", False),
    (r"(-\infty, 3) \cup (3, \infty)", r"x \neq 3", True), (r"x \neq 3", r"(-\infty,3)\cup(3,\infty)", True),
    (r"(-\infty, 3] \cup (3, \infty)", r"x \neq 3", False),
    (r"x < 2 \text{ or } x > 3", r"(-\infty,2)\cup(3,\infty)", True),
    (r"(-\infty,2)\cup(3,\infty)", r"x < 2 \text{ or } x > 3", True),
    (r"x \le 2 \text{ or } x > 3", r"(-\infty,2)\cup(3,\infty)", False),
])
def test_inequalities_compare_as_relations(answer, gold, passed):
    assert verdict(answer, gold).passed is passed


def test_a_relation_reads_the_same_from_either_side():
    assert intervals("b < a") == intervals("a > b") == [("()", "-\\infty", "a")]
    assert intervals(r"x \neq 3") == intervals(r"3 \neq x")


def test_sympy_parse_never_evaluates_model_text():
    # the form parse goes through the whitelisting grammar: a Python call is not code
    assert parse_tree("__import__('os').system('true')") is None
    tree = parse_tree(r"6 \cdot 75")
    assert isinstance(tree, sympy.Mul) and tree.args == (6, 75)  # left unevaluated
