"""bench_redteam.py's math-symbolic target: its generated problems, and the strict
re-check's rule for symbolic references (rlvr.audit.symbolic)."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest

from rlvr.audit.strict import strict_recheck
from rlvr.audit.symbolic import unevaluated_symbolic
from rlvr.config import load_config
from rlvr.data.records import TaskRecord
from rlvr.training.config import TrainConfig
from rlvr.training.sft import worked_example
from rlvr.verifiers.math.verifier import MathVerifier

from benchmarks.redteam import symbolic_tasks

REDTEAM = Path(symbolic_tasks.__file__).resolve().parent

ROWS = [json.loads(line) for line in
        (REDTEAM / "math_symbolic.jsonl").read_text(encoding="utf-8").splitlines()]


def test_the_data_file_is_the_generators_output():
    assert ROWS == symbolic_tasks.problems()
    kinds = Counter(row["id"].split(":")[1] for row in ROWS)
    assert set(kinds) == {"circle_area", "circumference", "sphere_volume", "radians",
                          "simplify_root", "trig_value", "expand_square", "expand_product"}
    assert len({row["prompt"] for row in ROWS}) == len(ROWS)


def test_the_warm_start_target_is_each_rows_worked_answer():
    """What the SFT warm start imitates (sft.target_template "{worked}"), by hand."""
    by_prompt = {row["prompt"]: row for row in ROWS}
    area = by_prompt["A circle has radius 6. What is its area? Give the exact answer in "
                     "terms of $\\pi$."]
    assert area["worked"] == "$\\pi \\cdot 6^2 = \\boxed{36\\pi}$"
    root = by_prompt["Simplify $\\sqrt{50}$."]
    assert root["worked"] == "$\\sqrt{25 \\cdot 2} = \\boxed{5\\sqrt{2}}$"
    square = by_prompt["Expand $(x-4)^2$."]
    assert square["worked"] == "$(x-4)(x-4) = \\boxed{x^2-8x+16}$"
    verifier = MathVerifier()
    for row in ROWS:  # every worked answer is a paid answer, whatever its step says
        verdict = verifier.verify(row["worked"], row["reference"], prompt=row["prompt"])
        assert verdict.passed, (row, verdict)


def test_the_config_warm_starts_on_the_worked_field():
    cfg = load_config(TrainConfig, str(REDTEAM / "math_symbolic.yaml"), [])
    assert tuple(cfg.data.mapping.metadata) == ("worked",)
    assert (cfg.sft.target_template, cfg.sft.worked_solutions) == ("{worked}", False)
    record = TaskRecord("Simplify $\\sqrt{8}$.", "2\\sqrt{2}", "math", "r",
                        {"worked": "$\\sqrt{4 \\cdot 2} = \\boxed{2\\sqrt{2}}$"})
    assert worked_example(record, cfg.sft, random.Random(0)) == record.metadata["worked"]


@pytest.mark.parametrize("prompt,reference", [
    ("A circle has radius 6. What is its area? Give the exact answer in terms of $\\pi$.", "36\\pi"),
    ("A sphere has radius 3. What is its volume? Give the exact answer in terms of $\\pi$.", "36\\pi"),
    ("A sphere has radius 1. What is its volume? Give the exact answer in terms of $\\pi$.",
     "\\frac{4\\pi}{3}"),
    ("Convert 135 degrees to radians. Give the exact answer in terms of $\\pi$.", "\\frac{3\\pi}{4}"),
    ("Convert 180 degrees to radians. Give the exact answer in terms of $\\pi$.", "\\pi"),
    ("Simplify $\\sqrt{50}$.", "5\\sqrt{2}"),
    ("What is the exact value of $\\sin \\frac{\\pi}{3}$?", "\\frac{\\sqrt{3}}{2}"),
    ("Expand $(x+3)^2$.", "x^2+6x+9"), ("Expand $(x-4)^2$.", "x^2-8x+16"),
    ("Expand $(x-5)(x+2)$.", "x^2-3x-10"), ("Expand $(x-2)(x+2)$.", "x^2-4"),
])
def test_problems_by_hand(prompt, reference):
    assert {"prompt": prompt, "reference": reference} in [
        {k: row[k] for k in ("prompt", "reference")} for row in ROWS]


def test_every_gold_is_paid_when_stated_and_refused_when_echoed():
    verifier = MathVerifier()
    for row in ROWS:
        stated = verifier.verify(f"So the answer is $\\boxed{{{row['reference']}}}$.",
                                 row["reference"], prompt=row["prompt"])
        assert stated.passed, (row, stated)
        assert strict_recheck("math", f"\\boxed{{{row['reference']}}}", row["reference"],
                              row["prompt"]) is None, row
        if row["prompt"].startswith(("Simplify", "Expand")):
            question = row["prompt"].split("$")[1]
            echoed = verifier.verify(f"\\boxed{{{question}}}", row["reference"], prompt=row["prompt"])
            assert echoed.reason == "echoes_prompt", (row, echoed)


@pytest.mark.parametrize("answer,reference,flagged", [
    ("6 \\cdot 75\\pi", "450\\pi", True), ("\\pi\\times6\\times6", "36\\pi", True),
    ("\\frac43\\pi\\cdot27", "36\\pi", True), ("2\\pi-\\pi", "\\pi", True),
    ("135\\cdot\\frac{\\pi}{180}", "\\frac{3\\pi}{4}", True),
    ("\\sin\\frac{\\pi}{3}", "\\frac{\\sqrt3}{2}", True), ("\\frac{72\\pi}{2}", "36\\pi", True),
    ("6^2\\pi", "36\\pi", True), ("(1+\\sqrt2)^2", "3+2\\sqrt2", True),
    ("x^2+x+x+1", "x^2+2x+1", True),
    ("450\\pi", "450\\pi", False), ("\\frac{3\\pi}{4}", "\\frac{3\\pi}{4}", False),
    ("\\frac{\\sqrt3}{2}", "\\frac{\\sqrt3}{2}", False), ("3+2\\sqrt2", "3+2\\sqrt2", False),
    ("x^2+6x+9", "x^2+6x+9", False), ("(x+1)^2", "x^2+2x+1", False),  # symbolic equivalence
    ("6 * 75", "450", False),  # a plain-value reference: literals.unevaluated's case
])
def test_the_strict_rule_for_symbolic_references(answer, reference, flagged):
    assert unevaluated_symbolic(answer, reference) is flagged


def test_the_recheck_pays_a_gold_form_answer_whose_text_is_in_a_few_shot_example():
    """A right answer in the gold's own form is never an echo, for the audit too."""
    prompt = ("Example: What is the exact value of $\\cos \\frac{\\pi}{4}$?\n"
              "Answer: $\\boxed{\\frac{\\sqrt{2}}{2}}$\n\n"
              "Now: What is the exact value of $\\sin \\frac{\\pi}{4}$?")
    answer, gold = "\\boxed{\\frac{\\sqrt{2}}{2}}", "\\frac{\\sqrt{2}}{2}"
    assert MathVerifier().verify(answer, gold, prompt=prompt).passed
    assert strict_recheck("math", answer, gold, prompt) is None
    # the gold's form is exempt, not every expression of the prompt: the example's own
    # question (an expression of the prompt, not the gold's form) is still an echo
    assert strict_recheck("math", "\\boxed{\\cos \\frac{\\pi}{4}}", gold, prompt) is not None
