"""The "format" verifier and composite rewards (weights, gates, references, names)."""

from __future__ import annotations

import pytest

from rlvr.verifiers import InvalidReference, get_verifier, register
from rlvr.verifiers.composite import CompositeVerifier, r1_math, register_composite
from rlvr.verifiers.format import FormatVerifier

F = FormatVerifier()


@pytest.mark.parametrize("completion,reason", [
    ("<think>a</think><answer>42</answer>", "well_formed"),
    ("  <think>\nsteps\n</think>\n\n<answer> 42 </answer>\n", "well_formed"),
    ("<answer>42</answer>", "no_think_block"),
    ("<think>a</think>", "no_answer_block"),
    ("<think>a</think><answer>1</answer><answer>2</answer>", "multiple_answer_blocks"),
    ("<think>a</think><answer>42</answer> so 42", "text_after_answer"),
    ("Sure! <think>a</think><answer>42</answer>", "text_outside_blocks"),
    ("<think>a</think> here: <answer>42</answer>", "text_outside_blocks"),
    ("<think>a</think><answer>  </answer>", "empty_answer"),
    ("<answer>42</answer><think>a</think>", "no_think_block"),
    ("<think>a<answer>42</answer></think>", "bad_tag_order"),
    ("<think>a</think><think>b</think><answer>1</answer>", "bad_tag_order"),
])
def test_format(completion, reason):
    verdict = F.verify(completion, None)
    assert verdict.reason == reason
    assert verdict.passed is (reason == "well_formed")
    assert verdict.score == (1.0 if reason == "well_formed" else 0.0)


def test_format_options():
    custom = FormatVerifier(think_tag="reasoning", answer_tag="final")
    assert custom.verify("<reasoning>x</reasoning><final>1</final>").passed
    assert not custom.verify("<think>x</think><answer>1</answer>").passed
    assert FormatVerifier(require_think=False).verify("<answer>1</answer>").passed
    in_prompt = FormatVerifier(think_in_prompt=True)
    assert in_prompt.verify("steps</think><answer>1</answer>").passed
    assert not in_prompt.verify("<think>steps</think><answer>1</answer>").passed
    with pytest.raises(ValueError):
        FormatVerifier(think_tag="a b")


GATED = [{"verifier": "format", "weight": 0.25, "gate": True},
         {"verifier": "exact", "weight": 0.75, "extract_tag": "answer"}]


def test_gate_zeroes_the_score_and_keeps_component_scores():
    verdict = CompositeVerifier(GATED).verify("<answer>42</answer>", "42")  # no think block
    assert (verdict.score, verdict.passed, verdict.reason) == (0.0, False, "gate_failed:format")
    assert verdict.details["gated_by"] == ["format"]
    assert verdict.details["components"]["exact"] == {"score": 1.0, "passed": True,
                                                      "reason": "correct"}


def test_weights_average_component_scores():
    composite = CompositeVerifier(GATED)
    right = composite.verify("<think>6*7</think><answer>42</answer>", "42")
    wrong = composite.verify("<think>6*7=42</think><answer>41</answer>", "42")
    assert (right.score, right.passed) == (1.0, True)
    # format passes (0.25 * 1) and the answer block is wrong (0.75 * 0); the 42 in the
    # reasoning does not count because exact sees only the answer block
    assert (wrong.score, wrong.passed, wrong.reason) == (0.25, False, "partial")


def test_ungated_partial_credit_and_zero_weight_logging():
    composite = CompositeVerifier([
        {"verifier": "ifeval", "weight": 3},
        {"verifier": "format", "weight": 1, "options": {"require_think": False}},
        {"verifier": "exact", "weight": 0, "name": "log_only"}])
    reference = {"ifeval": {"instruction_id_list": ["punctuation:no_comma", "startend:quotation"],
                            "kwargs": [{}, {}]}, "log_only": "x"}
    verdict = composite.verify("no commas here", reference)
    # ifeval 1/2 followed (weight 3), format fails (weight 1): (3 * 0.5 + 0) / 4
    assert verdict.score == pytest.approx(0.375)
    assert verdict.details["components"]["format"]["reason"] == "no_answer_block"
    assert verdict.details["components"]["log_only"]["passed"] is False


def test_reference_modes():
    composite = CompositeVerifier([{"verifier": "exact"}, {"verifier": "format", "weight": 0}])
    assert composite.verify("7", {"exact": "7"}).details["components"]["exact"]["passed"]
    assert composite.verify("7", "7").details["components"]["exact"]["passed"]  # shared
    forced = CompositeVerifier([{"verifier": "exact"}], reference_mode="per_component")
    with pytest.raises(InvalidReference, match="per_component"):
        forced.verify("7", "7")


def test_child_invalid_reference_names_the_component():
    composite = CompositeVerifier([{"verifier": "ifeval"}])
    with pytest.raises(InvalidReference, match="component 'ifeval'.*unknown instruction id"):
        composite.verify("x", {"instruction_id_list": ["nope"], "kwargs": [{}]})
    with pytest.raises(InvalidReference):
        composite.check_reference({"instruction_id_list": ["nope"], "kwargs": [{}]})


@pytest.mark.parametrize("components,message", [
    ([], "non-empty"),
    ([{"verifier": "exact", "weight": -1}], "weight"),
    ([{"verifier": "exact", "weight": 0}], "weight > 0"),
    ([{"verifier": "exact"}, {"verifier": "exact"}], "unique"),
    ([{"verifier": "exact", "bonus": 1}], "unknown field"),
    ([{"verifier": "no_such_verifier"}], "unknown verifier"),
])
def test_bad_composite_config(components, message):
    with pytest.raises((ValueError, KeyError), match=message):
        CompositeVerifier(components)


def test_named_composite_and_builtin_r1_math():
    register_composite("test_format_then_exact", GATED)
    named = get_verifier("test_format_then_exact")
    assert named.verify("<think>t</think><answer>5</answer>", "5").score == 1.0
    r1 = r1_math(format_options={"answer_tag": "final"})
    assert [(c.verifier, c.weight, c.gate, c.extract_tag) for c in r1.components] == [
        ("format", 0.0, True, None), ("math", 1.0, False, "final")]
    assert r1.components[0].options == {"answer_tag": "final"}
    with pytest.raises(ValueError):
        register("format", FormatVerifier)  # built-in names stay taken


# --- Adversarial cases (issue 14, item 7): structure without content does not pass ---

@pytest.mark.parametrize("completion,reason", [
    ("<think></think><answer>42</answer>", "empty_think"),
    ("<think> \n </think>\n<answer>42</answer>", "empty_think"),
    ("<think>...</think><answer>42</answer>", "empty_think"),
    ("<think>a</think><answer></answer>", "empty_answer"),
    ("<think>a</think><answer>.</answer>", "empty_answer"),
    ("<think></think><answer></answer>", "empty_think"),
    ("<think>x</think><answer>\u221e</answer>", "well_formed"),  # a symbol is an answer
    ("<think>6*7</think><answer>-5</answer>", "well_formed"),
    ("<think>a</think><answer>b</answer>", "well_formed"),  # a known limit: no judge of content
])
def test_format_needs_content_in_both_blocks(completion, reason):
    assert FormatVerifier().verify(completion).reason == reason


def test_empty_think_allowed_only_when_think_is_optional():
    # templates with thinking switched off write an empty think block
    optional = FormatVerifier(require_think=False)
    assert optional.verify("<think>\n\n</think>\n\n<answer>42</answer>").passed
    assert optional.verify("<think></think><answer> </answer>").reason == "empty_answer"


def test_think_in_prompt_still_needs_reasoning():
    in_prompt = FormatVerifier(think_in_prompt=True)
    assert in_prompt.verify("</think><answer>1</answer>").reason == "empty_think"
    assert in_prompt.verify("steps</think><answer>1</answer>").passed


def test_r1_math_gate_rejects_empty_reasoning():
    verdict = get_verifier("r1_math").verify("<think></think><answer>42</answer>", "42")
    assert (verdict.score, verdict.reason) == (0.0, "gate_failed:format")


def test_a_weighted_format_component_pays_a_wrong_answer():
    # the known limit docs/rewards.md states: structure with weight > 0 earns reward alone
    paying = CompositeVerifier([{"verifier": "format", "weight": 0.1, "gate": True},
                                {"verifier": "math", "weight": 1.0, "extract_tag": "answer"}])
    wrong = "<think>6*7 is 41</think><answer>41</answer>"
    assert paying.verify(wrong, "42").score == pytest.approx(0.1 / 1.1)
    assert get_verifier("r1_math").verify(wrong, "42").score == 0.0  # format weighs 0 there
