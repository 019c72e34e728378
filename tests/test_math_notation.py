"""Notation the math verifier reads on the normalisation and shape side (issue 14, item
6): space-grouped thousands and decimal commas, twice-escaped references, `;` and bare
braces as separators, ratio labels and inequalities as intervals. Pairs of whole
completions are in tests/data/math_recall.jsonl; these pin the rules themselves."""

from __future__ import annotations

import pytest

from rlvr.verifiers.math.inequality import intervals
from rlvr.verifiers.math.labels import is_label
from rlvr.verifiers.math.normalize import normalize
from rlvr.verifiers.math.reference import gold_text
from rlvr.verifiers.math.structure import parse_shape, split_items


@pytest.mark.parametrize("answer,text", [
    ("1 000", "1000"), ("12 345 678", "12345678"), ("2 500.75", "2500.75"),
    ("1 00", "1 00"),  # not a group of three
    ("1 0000", "1 0000"),
    ("0,111", "0,111"),  # a leading 0 group is no thousands
    ("12,102", "12102"), ("(12,102)", "(12,102)"), ("[1,500]", "[1,500]"),  # entries
    ("\\cfrac{1}{3}", "\\frac{1}{3}"), ("\\mathrm{e}^2", "e^2"), ("\\text{i}", "i"),
    ("(11,7)or(7,11)", "(11,7) or (7,11)"),
    ("1,000.99\u20ac", "1000.99"), ("\u00a3 12", "12"), ("x\u00b2", "x^2"),
    ("\x0crac{1}{2}", "\\frac{1}{2}"), ("\\\x0crac{1}{2}", "\\frac{1}{2}"),
    ("x = \\frac{1}{3} \\approx 0.33", "x = \\frac{1}{3}"), ("x \\approx 11", "x \\approx 11"),
    ("-2 \\\\le x", "-2 \\\\le x"),  # an answer is not undoubled (reference.py does golds)
])
def test_normalize(answer, text):
    assert normalize(answer).text == text


@pytest.mark.parametrize("reference,gold", [
    ("1000,99", "1000.99"), ("1,22", "1.22"), ("$0,111$", "0.111"), ("-0,5", "-0.5"),
    ("2,5", "2.5"),
    ("1,000", "1,000"),  # three digits: thousands, left to normalize.py
    ("-2,1", "-2, 1"), ("1,-2", "1,-2"),  # MATH-500's lists
    ("1, 22", "1, 22"),
    ("$-2 \\\\le x \\\\le 7$", "$-2 \\le x \\le 7$"),
    ("\\\\boxed{\\\\frac{1}{2}}", "\\frac{1}{2}"),
    ("\\begin{pmatrix} x \\\\ y \\end{pmatrix}", "\\begin{pmatrix} x \\\\ y \\end{pmatrix}"),
])
def test_gold_text_notation(reference, gold):
    assert gold_text(reference) == gold


@pytest.mark.parametrize("text,items", [
    ("1, 2", ["1", "2"]), ("-12;-11;-10", ["-12", "-11", "-10"]),
    ("p=5,q=2;p=7,q=2", ["p=5,q=2", "p=7,q=2"]), ("(1;2), (3;4)", ["(1;2)", "(3;4)"]),
    ("1;2;", ["1", "2"]),
])
def test_split_items(text, items):
    assert split_items(text) == items


@pytest.mark.parametrize("text,kind", [
    ("{1,2,3}", "set"), ("{5}", "expr"), ("(0;-2;6)", "ordered"), ("-12;-11", "list"),
    ("1,22", "decimal_comma"), ("1, 22", "list"), ("1,2,3", "list"),
    ("|x| > 1", "union"), ("0 < f(x) < 1", "ordered"), ("|x| > a", "inequality"),
])
def test_shape_kind(text, kind):
    assert parse_shape(text).kind == kind


def test_decimal_comma_keeps_both_readings():
    shape = parse_shape("1,22")
    assert shape.text == "1.22" and [p.text for p in shape.parts[0].parts] == ["1", "22"]


@pytest.mark.parametrize("text,found", [
    ("-2 \\le x < 7", [("[)", "-2", "7")]),
    ("7 \\ge x > -2", [("(]", "-2", "7")]),
    ("x > a", [("()", "a", "\\infty")]), ("5 < x", [("()", "5", "\\infty")]),
    ("a < x < b", [("()", "a", "b")]),
    ("-x > -1", [("()", "-\\infty", "1")]),
    ("|x| \\le 2", [("[]", "-2", "2")]),
    ("|x| > 1", [("()", "-\\infty", "-1"), ("()", "1", "\\infty")]),
    ("1 \\le |z| \\le \\frac{3}{2}", [("[]", "-\\frac{3}{2}", "-1"), ("[]", "1", "\\frac{3}{2}")]),
    ("0 < f(x) < 1", [("()", "0", "1")]), ("x_1 \\ge 0", [("[)", "0", "\\infty")]),
    # a relation is the set it describes: x != 3 is the line without 3
    ("x \\neq 3", [("()", "-\\infty", "3"), ("()", "3", "\\infty")]),
    ("3 \\neq x", [("()", "-\\infty", "3"), ("()", "3", "\\infty")]),
    # two letters: the later one is the unknown, so the relation reads the same both ways
    ("b < a", [("()", "-\\infty", "a")]), ("a > b", [("()", "-\\infty", "a")]),
])
def test_intervals(text, found):
    assert intervals(text) == found


@pytest.mark.parametrize("text", ["x \\neq y \\neq 3", "1 < x > 3", "|x| > a", "|x| < -1", "x < y < z < w"])
def test_intervals_left_as_strings(text):
    assert intervals(text) is None


@pytest.mark.parametrize("lhs,label", [
    ("S_{MBCN}:S", True), ("V_{1}:V_{2}", True), ("A:B", True), ("AM : MC", True),
    ("\\frac{NO}{BO}", True), ("\\frac{a}{b}", True),
    ("2:3", False), ("\\frac{x+1}{y}", False), ("ABCDE:F", False), ("\\frac{1}{2}", False),
])
def test_ratio_labels(lhs, label):
    assert is_label(lhs, parse_shape("7:32")) is label
