"""rlvr.mathtext, the notation facts the math verifier and the audit share. Each span and
reading below is counted by hand from the string beside it."""

from __future__ import annotations

import time

import pytest

from rlvr.mathtext import (THOUSANDS_MARKUP, UNICODE_OPERATORS, Box, brace_pairs,
                           find_boxes, match_brace, operators_as_ascii, unwrap_boxes)


@pytest.mark.parametrize("text, boxes", [
    # "So " is 3 characters, "\boxed{7}" 9: the box spans [3, 12)
    (r"So \boxed{7}.", [Box("7", 3, 12)]),
    (r"\fbox{7}", [Box("7", 0, 8)]),
    (r"\boxed {3}", [Box("3", 0, 10)]),  # a space before the brace is still the box
    (r"\boxed{\frac{1}{2}}", [Box(r"\frac{1}{2}", 0, 19)]),  # nested groups stay inside
    (r"\boxed{\boxed{5}}", [Box("5", 0, 17)]),  # a box around a box is one box
    (r"\boxed{{24}}", [Box("24", 0, 12)]),
    (r"\boxed{\color{red}{450}}", [Box("450", 0, 24)]),
    (r"\boxed{\textcolor{red}{7}}", [Box("7", 0, 26)]),
    (r"\boxed{ \color{red} 450 }", [Box("450", 0, 25)]),
    # an escaped brace is a literal of the set, not grouping: the box closes at the end
    (r"\boxed{\{1,2\}}", [Box(r"\{1,2\}", 0, 15)]),
    # two boxes inside one: the outer box's content is both, not cut at the first `}`
    (r"\boxed{\boxed{2} + \boxed{3}}", [Box(r"\boxed{2} + \boxed{3}", 0, 29)]),
    (r"\boxed{1} then \boxed{2}", [Box("1", 0, 9), Box("2", 15, 24)]),
    # an unclosed box is no answer, and nothing after its `{` is read outside it
    (r"\boxed{1} and \boxed{2 \boxed{3}", [Box("1", 0, 9)]),
    ("no box here", []),
])
def test_find_boxes(text, boxes):
    assert find_boxes(text) == boxes


def test_braces_pair_outside_escapes():
    text = r"a{b\{c}d{e{f}}"
    #        0123 45678901 23   (the `\{` at 3-4 is a literal)
    assert match_brace(text, 1) == 6
    assert match_brace(text, 8) == 13
    assert match_brace("{unclosed", 0) is None
    assert brace_pairs(text) == {1: 6, 10: 12, 8: 13}


def test_unwrap_boxes_keeps_a_loose_set_outside_a_box():
    assert unwrap_boxes("{1,3}") == "{1,3}"  # a set written loosely
    assert unwrap_boxes("{1,3}", braces=True) == "1,3"  # a box's content


@pytest.mark.parametrize("text, ascii_", [
    (r"6 \times 75", "6 * 75"), (r"6\cdot75", "6*75"), (r"a \ast b", "a * b"),
    (r"8 \div 2", "8 / 2"), ("6 \u00d7 75", "6 * 75"), ("8 \u00f7 2", "8 / 2"),
    ("5 \u2212 3", "5 - 3"), ("5 \u2014 3", "5 - 3"), ("a\u2217b\u00b7c\u22c5d", "a*b*c*d"),
    (r"\timesx \divide", r"\timesx \divide"),  # longer commands are other commands
    ("x \u2264 3", "x \u2264 3"),  # a relation is no operation: left alone
])
def test_operators_as_ascii(text, ascii_):
    assert operators_as_ascii(text) == ascii_


def test_each_unicode_operator_has_one_meaning_for_both_readers():
    """The verifier writes a sign as its LaTeX; the audit reads LaTeX or the sign as ASCII.
    Both routes must land on the same operator."""
    operations = 0
    for sign, latex in UNICODE_OPERATORS.items():
        if operators_as_ascii(latex) in ("*", "/", "-"):
            operations += 1
            assert operators_as_ascii(sign) == operators_as_ascii(latex), sign
        else:  # a relation or `\pm`: no operation of the four, left as written
            assert operators_as_ascii(sign) == sign, sign
    assert operations == 8  # x, two dots, the asterisk, division and three dashes


@pytest.mark.parametrize("text, plain", [
    ("1{,}000", "1000"), (r"1\,000", "1000"), (r"10,\!080", "10080"),
    (r"10,\! 080", "10080"), (r"11,\!111,\!111,\!100", "11111111100"),
    (r"1\,00", r"1\,00"),  # two digits after it: no thousands group
    ("1,000", "1,000"),  # a plain comma is each reader's own call (a list, a tuple)
])
def test_thousands_markup(text, plain):
    assert THOUSANDS_MARKUP.sub("", text) == plain


@pytest.mark.parametrize("text", [
    "\\boxed{" * 50_000,                       # 50k unclosed boxes
    "\\boxed{" * 5_000 + "1" + "}" * 5_000,    # 5k nested boxes
    "{" * 100_000 + "\\" * 100_001,           # braces and escapes
    "\\boxed{" + "\\color{r}" * 20_000 + "{1}}",
])
def test_hostile_text_is_read_in_linear_time(text):
    start = time.perf_counter()
    find_boxes(text)
    unwrap_boxes(text, braces=True)
    # linear: well under a second for 100k characters, even on a loaded machine
    assert time.perf_counter() - start < 5
