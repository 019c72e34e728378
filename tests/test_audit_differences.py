"""The audit is a second opinion on what the math verifier paid: it shares the verifier's
notation facts (rlvr.mathtext: boxes, braces, operator signs, thousands markup, the verbs
of a stated answer) and none of its judgements.

1. The intended differences: attempts the verifier pays that the audit's strict rules
   still flag, each with why the audit is meant to be stricter there. If one of these
   stops disagreeing, either the verifier or the audit changed a rule: decide which is
   right, then move the case.
2. The shared facts: on every completion and reference of the math corpora, both read
   the same boxes at the same spans, and neither keeps a copy of the helpers.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from rlvr import mathtext
from rlvr.audit import answers, literals
from rlvr.audit.strict import strict_findings
from rlvr.verifiers.math.extraction import boxed_candidates, is_placeholder
from rlvr.verifiers.math.normalize import normalize, unicode_to_latex
from rlvr.verifiers.math.verifier import MathVerifier

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data"
CORPORA = ["math_labelled.jsonl", "math_recall.jsonl", "redteam_math_hacks.jsonl"]
VERIFIER = MathVerifier()

# (completion, reference, the audit's first finding code, why the audit is stricter)
INTENDED = [
    ("x = \\frac{1}{2}", "\\frac{1}{2}", "no_answer",
     "the verifier reads a text that is nothing but an answer as the answer (what a "
     "caller's <answer> block holds); the audit wants the answer stated: a box, a marker "
     "or a value the text ends on"),
    ("Final: $\\boxed{f(2) = 11}$.", "11", "not_a_value",
     "the verifier pays a value under a label; against a plain-value reference the audit "
     "wants the plain literal, so a person sees every labelled answer"),
    ("The answer is \\boxed{4.5 \\times 10^{2}}.", "450", "unevaluated",
     "the verifier's answer-form table counts scientific notation as a final form; the "
     "audit flags any operator between number literals"),
    ("So $\\boxed{2}$ or equivalently $\\boxed{\\frac{4}{2}}$.", "2", "unevaluated",
     "the verifier pays two boxes that agree; the audit reads the last box alone, and "
     "that one is a division left undone"),
    ("The answer is $\\boxed{\\frac{1}{3} \\approx 0.33}$.", "\\frac{1}{3}", "unevaluated",
     "the verifier drops an approximation written after an exact value; the audit has no "
     "such rule and sees the arithmetic"),
    ("So the answer is 450. (format: \\boxed{ANSWER})", "450", "not_a_value",
     "the verifier skips a box that holds the instruction's placeholder (it is no answer) "
     "and pays the stated 450; the audit reads every box as written, and a response that "
     "ends on the placeholder is worth a person's look"),
    ("The answer is \\boxed{7 \\times 5 = 35}.", "35", "unevaluated",
     "the verifier pays a boxed chain of equalities that ends on the value (chains.py); "
     "the audit flags the work written in the box"),
]


@pytest.mark.parametrize("completion, reference, code, why", INTENDED)
def test_the_audit_flags_what_the_verifier_pays_here_on_purpose(completion, reference,
                                                               code, why):
    verdict = VERIFIER.verify(completion, reference)
    assert verdict.passed and verdict.score == 1.0, (verdict.reason, why)
    found = strict_findings("math", completion, reference, None)
    assert [f.code for f in found][:1] == [code], (found, why)


# Where the copies had drifted apart on a fact: the verifier paid these, and the audit
# used to flag them (`\\cfrac` was no fraction to it, `10,\\!080` two numbers, "be" no
# verb of a closing statement, "Let's verify:" no check, so 13 was the answer). Sharing the fact, the audit reads each as the verifier.
DRIFTS_FIXED = [
    ("The answer is $\\boxed{\\cfrac{3}{4}}$.", "\\frac{3}{4}"),
    ("The answer is $\\boxed{10,\\!080}$.", "10080"),
    ("The answer is $\\boxed{1\\,000\\,000}$.", "1000000"),
    ("So after 5 years, he will be 13.", "13"),
    # a closing check is no statement of the answer, however it opens
    ("So the value is 5. Let's verify: 2(5)+3 = 13.", "5"),
    ("So x is 5.\nDouble-check: 2(5)+3 = 13.", "5"),
]


@pytest.mark.parametrize("completion, reference", DRIFTS_FIXED)
def test_a_fact_the_copies_drifted_on_is_now_read_alike(completion, reference):
    assert VERIFIER.verify(completion, reference).passed
    assert strict_findings("math", completion, reference, None) == []


def test_a_later_statement_with_any_answer_verb_conflicts_for_both():
    """"should be" joins an answer to its value for the verifier, so it does for the
    audit: the box of 450 is taken back (the audit's markers used to know only "is")."""
    completion = "So \\boxed{450}.\nThe answer should be 500."
    assert not VERIFIER.verify(completion, "450").passed
    assert [f.code for f in strict_findings("math", completion, "450", None)] == ["conflicting"]


def test_the_audit_reads_a_reference_box_at_any_depth():
    # the audit's own box pattern allowed two levels of braces and no \fbox
    assert literals.value_of_reference("so \\fbox{7}") == 7
    assert literals.value_of_reference("\\boxed{{\\frac{3}{4}}}") == Fraction(3, 4)
    assert literals.evaluate("5 \u2014 3") == 2  # an em dash is a minus to both


def _corpus() -> list[str]:
    """Every completion and string reference of the math corpora (references are read
    for their last box by both: a worked solution as a gold)."""
    texts = []
    for name in CORPORA:
        for line in (DATA / name).read_text(encoding="utf-8").splitlines():
            if line.strip():
                row = json.loads(line)
                texts += [row["completion"]] + (
                    [row["reference"]] if isinstance(row["reference"], str) else [])
    return texts


def test_the_corpus_is_large_and_full_of_boxes():
    texts = _corpus()
    assert len(texts) > 1000
    assert sum(bool(mathtext.find_boxes(t)) for t in texts) > 400


def test_both_read_the_same_boxes_at_the_same_spans():
    for text in _corpus():
        audit = [(s.text, s.start, s.end) for s in answers.boxes(text)
                 if not is_placeholder(s.text)]  # the verifier's opinion: no answer
        verifier = [(c.text, c.start, c.end) for c in boxed_candidates(text)]
        assert audit == verifier, text
        for _, start, end in verifier:  # each span is a box whose braces pair up
            assert text[start] == "\\" and text[end - 1] == "}"
            open_brace = text.index("{", start)
            assert mathtext.match_brace(text, open_brace) == end - 1, text


def test_a_reference_has_the_same_last_box_for_both():
    """The audit's plain value of a worked-solution reference comes from the box the
    verifier grades against."""
    for text in _corpus():
        boxes = boxed_candidates(text)
        if not boxes:
            continue
        value = literals.value_of_reference(text)
        if value is not None:
            assert literals.value_of_reference(boxes[-1].text) == value, text


OPERATION_SIGNS = sorted(sign for sign, latex in mathtext.UNICODE_OPERATORS.items()
                         if mathtext.operators_as_ascii(latex) in ("*", "/", "-"))


@pytest.mark.parametrize("sign", OPERATION_SIGNS)
def test_both_read_an_operator_sign_as_the_same_operator(sign):
    """`6 × 7` through the verifier's normalisation and through the audit's: the same
    operation (the audit's ASCII of the verifier's LaTeX is the audit's own reading)."""
    text = f"6 {sign} 7"
    audit = literals.compact(text)
    assert literals.compact(unicode_to_latex(text)) == audit
    assert literals.compact(normalize(text).text) == audit


# A private copy of a shared fact is how the two drifted apart before.
COPIES = [r"\\\\\(\?:boxed\|fbox\)", r"def _?(?:match|closing)_brace", r"def _?brace_pairs",
          r"\\\\\(\?:textcolor\|color\)\\s\*\\\{\[\^\{\}\]\*\\\}", r"times\|cdot\|ast",
          r"\\u00d7"]


def test_no_module_keeps_its_own_copy_of_the_shared_facts():
    sources = [p for p in (ROOT / "src" / "rlvr").rglob("*.py")
               if p.parts[-3:-1] in {("rlvr", "audit"), ("verifiers", "math")}]
    assert len(sources) > 20
    for path in sources:
        text = path.read_text(encoding="utf-8")
        for copy in COPIES:
            assert not re.search(copy, text), f"{path.name} copies {copy}"
