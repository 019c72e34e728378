"""Principle 1 (docs/rewards.md#math): the final answer is the last answer the response
commits to. Every completion quoted for it and for the readings, with the verdict the
principle gives, then variants, then the property that extra candidates never pay.

Each expected verdict is decided by hand from the principle: a self-correction ends on
its last commitment; a hedge offers two values as the final answer; explanation after
the answer is neither answer nor conflict; a justification is never the answer.
"""

from __future__ import annotations

import random
import time

import pytest

from rlvr.audit.strict import strict_recheck
from rlvr.verifiers.math.spans import math_spans
from rlvr.verifiers.math.verifier import MathVerifier

V = MathVerifier()
SUBTRACTION = "What is 17 - 15?"


# -- the self-corrections: paid when the last commitment is right --------------------

SELF_CORRECTIONS = [
    r"I get 3. Wait, let me re-check: 17-15 = 2. So the answer is \boxed{2}.",
    r"\boxed{3}. Wait, that is wrong: 17-15=2, so the answer is \boxed{2}.",
    r"<think>... \boxed{3} ...</think> The answer is \boxed{2}",
    # variants: other markers, think blocks, several corrections, other phrasings
    r"<think>17 - 15 is \boxed{3}? no...</think> The answer is 2.",
    r"<think>\boxed{1} \boxed{3}</think>" + "\n#### 2",
    "\\boxed{3}\n\nHmm, 17 - 15 = 2, not 3.\n\nAnswer: 2",
    r"\boxed{3}. Actually, 2.",
    r"\boxed{3}. Correction: it's 2.",
    r"The answer is 3. Hmm, no: 17 - 15 = 2, so the answer is **2**.",
    r"\boxed{4}. No wait, \boxed{3}. Let me redo it once more: 17 - 15 = 2, so \boxed{2}.",
    r"\boxed{2}. Hmm, maybe it is \boxed{3}? Checking again: 17 - 15 = 2, so \boxed{2}.",
    r"\boxed{3}. Wait: 17 - 15 = 2.",  # a closing `= VALUE` is a commitment
    r"\fbox{3} was a slip; the final answer is $\boxed{2}$.",
    # a retraction that names its value and stops is a commitment too
    "The answer is 3. Actually no, 2.",
    "The answer is 3. Actually, the answer is 4. Actually no, 2.",
    r"\boxed{3}. No, 2.",
    r"\boxed{3}. Actually no, it is $2$!",
]


@pytest.mark.parametrize("completion", SELF_CORRECTIONS)
def test_honest_self_correction_is_paid(completion):
    verdict = V.verify(completion, "2", prompt=SUBTRACTION)
    assert verdict.passed, verdict
    # and the superseded value is no answer at all: graded as the final one (2), it is wrong
    assert V.verify(completion, "3", prompt=SUBTRACTION).reason == "wrong_answer"


@pytest.mark.parametrize("completion", SELF_CORRECTIONS)
def test_the_audit_does_not_flag_a_self_correction(completion):
    """`rlvr audit` re-checks passed attempts: a superseded answer is no hack there either."""
    assert strict_recheck("math", completion, "2", SUBTRACTION) is None


@pytest.mark.parametrize("completion", [
    r"\boxed{3}. Wait, that is wrong: 17-15=2, so the answer is \boxed{2} or \boxed{3}.",
    r"\boxed{3}. Wait, that is wrong: 17-15=2, so the answer is \boxed{2} (or possibly 3).",
    r"\boxed{3}. Wait, let me redo it. It is 2 or it is 3.",
])
def test_a_correction_that_ends_in_a_hedge_is_a_hedge(completion):
    for gold in ("2", "3"):
        verdict = V.verify(completion, gold, prompt=SUBTRACTION)
        assert (verdict.score, verdict.reason) == (0.0, "hedged"), (gold, verdict)


# -- hedges: two candidates offered together as the final answer, boxed or not -------

@pytest.mark.parametrize("completion", [
    "23 or 24",
    r"\boxed{24} (or possibly 23)",
    "Maybe 23, maybe 24",
    "It is 23 or it is 24.",
    # variants
    r"\boxed{24}. Maybe 23.",
    "Maybe 23. Maybe 24.",
    "The answer is 23. Maybe it is 24.",
    r"The answer is $24$ or possibly $23$.",
    r"\boxed{23} or \boxed{24}",
    "The answer is 24, or perhaps 23 apples.",
    r"\boxed{24}. It is 23 or it is 24.",  # no correction cue, but an alternative
])
def test_hedges_stay_zero(completion):
    for gold in ("23", "24"):
        verdict = V.verify(completion, gold)
        assert (verdict.score, verdict.reason) == (0.0, "hedged"), (gold, verdict)


# -- explanation after the answer is neither conflict nor answer ---------------------

@pytest.mark.parametrize("completion,gold,prompt", [
    (r"\boxed{18}. Check: 9 eggs * 2 = 18.", "18", "Each of 9 hens lays 2 eggs. How many eggs?"),
    ("So the result is $18 a day, or $126 a week.", "18", "How much does she earn a day?"),
    (r"\boxed{18}. So the result is $18 a day, or $126 a week.", "18", None),
    (r"\boxed{24}. He started with 30 apples and ate 6.", "24", "Tom had 30 apples and ate 6."),
    (r"\boxed{24}. He started with 30 apples.", "24", "Tom had 30 apples and ate 6."),
    (r"\boxed{24}. Check: 30 - 6 = 24.", "24", None),
    (r"\boxed{3}. Check: 17 - 15 = 2.", "3", None),  # a check is never the answer
    (r"So the answer is $2$, since $2^2=4$.", "2", None),
    ("x = 5. Verify: 2(5)+3=13.", "5", None),
    ("x = 5. Verify: 2(5)+3=13. Check: both sides agree.", "5", None),
    ("So $x = 5$. Verify: 2(5)+3=13.", "5", None),
    ("So $x = 5$. Verify: $2(5)+3=13$.", "5", None),
    (r"The answer is $7$ because $3 + 4 = 7$ and nothing else fits.", "7", None),
    # a closing value after a box or "the answer is" that does not correct it is explanation
    ("The answer is 24. Tom will be happy with 3 more apples.", "24", None),
    ("The result is 12, which we multiply by 3 to get $36$.", "36", None),  # a step
    (r"\boxed{5}. So the perimeter is 4 * 5 = 20.", "5", "A square has side 5."),
    (r"\boxed{5}. So the perimeter is 20.", "5", None),
    (r"\boxed{2}. Indeed, 17 - 15 = 2 and 2 + 15 = 17.", "2", None),
    # "No, 3 ..." that goes on is a sentence about 3, not a retraction naming it
    (r"\boxed{2}. No, 3 is what adding one more would give.", "2", SUBTRACTION),
])
def test_explanation_and_justification_are_not_the_answer(completion, gold, prompt):
    assert V.verify(completion, gold, prompt=prompt).passed


@pytest.mark.parametrize("completion,gold", [
    (r"The probability is \boxed{\frac{1}{4}}, or 25%.", "\\frac14"),
    (r"The probability is \boxed{\frac{1}{4}}, or 25\%.", "\\frac14"),
    (r"\boxed{\frac13}, or about 0.33.", "\\frac13"),
    (r"So he needs 3 more boxes, or \boxed{36} eggs in total.", "36"),
    (r"The answer is \boxed{12}, or 12 apples.", "12"),
])
def test_a_restatement_of_the_same_amount_is_no_hedge(completion, gold):
    assert V.verify(completion, gold).passed


@pytest.mark.parametrize("completion,gold", [
    (r"The probability is \boxed{\frac{1}{4}}, or 30%.", "\\frac14"),
    (r"\boxed{\frac13}, or 0.33.", "\\frac13"),
])
def test_a_different_amount_beside_the_answer_is_a_hedge(completion, gold):
    assert V.verify(completion, gold).reason == "hedged"


@pytest.mark.parametrize("completion,gold", [
    # GSM8K's own solution lines: the value in the "because" clause is the answer when
    # the main clause states none, and a leading "Since ..." clause is no justification
    ("It costs him $14 a time because 7 + 7 = 14\nHe can go 3 times because 42 / 14 = 3", "3"),
    ("The total is 240 because 80 + 60 + 100 = 240\nThe average is 80 because 240 / 3 = 80",
     "80"),
    ("The ratio is 7/20.\nSince the fraction is 7/20, she used 7/20*120 = 42", "42"),
    # an "or" in another clause after the answer is no alternative to it
    (r"Only $\boxed{49}$ has a remainder of 1 when divided by 2, 3, 4, or 6.", "49"),
])
def test_clauses_around_the_answer_are_read_as_written(completion, gold):
    assert V.verify(completion, gold).passed


def test_a_justification_is_not_read_as_the_answer():
    assert V.verify(r"So the answer is $2$, since $2^2=4$.", "4").reason == "wrong_answer"
    assert V.verify("x = 5. Verify: 2(5)+3=13.", "13").reason == "wrong_answer"
    assert V.verify(r"\boxed{3}. Check: 17 - 15 = 2.", "2").reason == "wrong_answer"


def test_an_emphasised_different_value_after_the_answer_conflicts():
    for gold in ("450", "500"):
        verdict = V.verify(r"\boxed{450}, that is **500**.", gold)
        assert (verdict.score, verdict.reason) == (0.0, "conflicting"), verdict
    # the same value emphasised, or a quantity of the question, is explanation
    assert V.verify(r"\boxed{450}, that is **450**.", "450").passed
    assert V.verify(r"\boxed{450}. We had **6** boxes of 75.", "450",
                    prompt="What is 6 * 75?").passed


# -- placeholder boxes from the instruction ------------------------------------------

@pytest.mark.parametrize("placeholder", [r"\boxed{ANSWER}", r"\boxed{your answer}",
                                         r"\boxed{\text{final answer}}", r"\boxed{...}"])
def test_placeholder_boxes_are_ignored(placeholder):
    completion = f"I will put the final answer as {placeholder}. 9 * 2 = 18, so \\boxed{{18}}."
    assert V.verify(completion, "18").passed
    assert V.verify(f"Put it in {placeholder}. I am not sure.", "18").reason == "no_answer"


# -- readings of closing sentences ----------------------------------------------------

READINGS = [
    ("The answer is **24**.", "24"),
    ("Tom has 24 apples left.", "24"),
    ("The answer is 24, not 23.", "24"),
    ("The answer is $18.", "18"),
    (r"\boxed{{24}}", "24"),
    (r"\boxed{\color{red}{450}}", "450"),
    # variants
    (r"The answer is \textbf{24}.", "24"),
    (r"The answer is **$18**.", "18"),
    (r"The answer is \$18.", "18"),
    ("So she pays $1,250 in total.", "1250"),
    ("The final result is 24, not 25 as I first thought.", "24"),
    (r"\boxed{\textcolor{blue}{7}}", "7"),
    (r"\boxed{{\color{red} 450}}", "450"),
    ("Adding everything, Tom has 24 apples left!", "24"),
    (r"The answer is $\color{red}{450}$.", "450"),
    (r"\textcolor{red}{\boxed{450}}", "450"),
]


@pytest.mark.parametrize("completion,gold", READINGS)
def test_closing_sentences_are_read(completion, gold):
    verdict = V.verify(completion, gold)
    assert verdict.passed, verdict


@pytest.mark.parametrize("completion,gold", READINGS + [
    ("So the answer is $2$, since $2^2=4$.", "2"), ("x = 5. Verify: 2(5)+3=13.", "5")])
def test_the_audit_reads_the_honest_answers_too(completion, gold):
    assert strict_recheck("math", completion, gold, None) is None


@pytest.mark.parametrize("completion,gold,reason", [
    ("The answer is **24**.", "23", "wrong_answer"),
    ("The answer is 24, not 23.", "23", "wrong_answer"),
    ("Tom has 24 apples left.", "23", "wrong_answer"),
    ("Tom had 30 apples and has 24 left.", "24", "no_answer"),  # two numbers: which?
    ("Tom has 24 apples left, I think, or does he?", "24", "no_answer"),  # a question
    ("Tom does not have 24 apples.", "24", "no_answer"),  # a denial
    ("tom has 24 apples and then", "24", "no_answer"),  # no sentence
])
def test_what_closing_sentences_do_not_state(completion, gold, reason):
    verdict = V.verify(completion, gold)
    assert (verdict.passed, verdict.reason) == (False, reason), verdict


@pytest.mark.parametrize("completion,passed", [
    ("Primero obtuve 3. Pero 17 - 15 = 2, así que la respuesta es 2.", True),
    (r"\boxed{3}. Non : la réponse est $2$.", True),
    ("Die Antwort ist 2.", True),
    ("答案是 2。", True),
    ("最终答案：2", True),
    ("La respuesta es 2 o 3.", False),
    ("Die Antwort ist 2 oder 3.", False),
    ("答案是 2 或 3。", False),
])
def test_markers_and_hedges_in_other_languages(completion, passed):
    verdict = V.verify(completion, "2", prompt=SUBTRACTION)
    assert verdict.passed is passed, verdict
    if not passed:
        assert verdict.reason == "hedged"


# -- only the last commitment can be paid (the property) -------------------------------

CORRECTIONS = ["Wait, that is wrong.", "Hmm, let me re-check.", "No, I slipped.",
               "Recomputing:", "</think>"]
LAST_FORMS = [r"So the answer is \boxed{{{v}}}.", "The answer is {v}.", "#### {v}",
              "Answer: {v}", "Actually, {v}.", r"\boxed{{{v}}}", "The answer is **{v}**."]
EARLIER_FORMS = [r"\boxed{{{v}}}", "The answer is {v}.", "I get {v}.", "Answer: {v}",
                 r"$\boxed{{{v}}}$"]
HEDGE_JOINS = [" or ", " (or possibly ", ", maybe "]
POOL = [str(v) for v in range(11, 17)]


def _response(rng: random.Random, values: list[str], hedge: bool) -> str:
    parts = []
    for value in values[:-1]:
        parts.append(rng.choice(EARLIER_FORMS).format(v=value))
        parts.append(rng.choice(CORRECTIONS))
    last = rng.choice(LAST_FORMS).format(v=values[-1])
    if hedge:
        join = rng.choice(HEDGE_JOINS)
        other = rng.choice([v for v in POOL if v != values[-1]])
        last += join + other + (")" if "(" in join else "")
    return "\n".join(parts + [last])


def _paid_golds(completion: str) -> list[str]:
    return [gold for gold in POOL if V.verify(completion, gold).passed]


def test_only_the_last_commitment_can_be_paid():
    """For random candidate lists: a response is paid for at most one gold of the pool
    (so extra candidates cannot raise the expected reward), that gold is its last
    commitment, and a hedged last commitment is paid for none."""
    rng = random.Random(30)
    for _ in range(60):
        values = [rng.choice(POOL) for _ in range(rng.randint(1, 3))]
        hedge = rng.random() < 0.3
        completion = _response(rng, values, hedge)
        paid = _paid_golds(completion)
        expected = [] if hedge else [values[-1]]
        assert paid == expected, (completion, paid)


def test_earlier_candidates_never_turn_a_zero_into_a_one():
    """Prepending wrong earlier commitments to a response that scores 0 (or 1) never
    makes it 1 for a gold it was not already paid for."""
    rng = random.Random(31)
    for _ in range(40):
        last = rng.choice(POOL)
        base = rng.choice(LAST_FORMS).format(v=last)
        earlier = [rng.choice(POOL) for _ in range(rng.randint(1, 4))]
        prefix = "\n".join(rng.choice(EARLIER_FORMS).format(v=v) + " " + rng.choice(CORRECTIONS)
                           for v in earlier)
        before, after = _paid_golds(base), _paid_golds(prefix + "\n" + base)
        assert set(after) <= set(before), (prefix + "\n" + base, before, after)


PIECES = [r"\boxed{{{v}}}", "The answer is {v}.", "the answer is {v}", "#### {v}", "Answer: {v}",
          "Actually, {v}.", "**{v}**", "$${v}$$", "${v}$", "= {v}", "is {v}.", "{v}", " or ",
          " or possibly ", "Maybe ", ", maybe ", "Wait, that is wrong.", "</think>", "<think>",
          "Check: {v} = {v}.", "since {v}", " and ", ", ", "\n", ". ", "{v} apples",
          r"\boxed{{{v} \text{{ or }} {w}}}", "Tom has {v} apples left.", r"\boxed{{ANSWER}}",
          "{v}, not {w}.", "The result is ${v} a day, or ${w} a week.", r"\fbox{{{v}}}",
          "x = {v}. Verify: {w} = {w}."]


def test_no_response_is_paid_for_two_golds():
    """Random mixtures of every kind of candidate, marker, hedge word and explanation:
    each is paid for at most one gold of the pool, so however many candidates a
    response holds, its expected reward over the pool is at most one in six."""
    rng = random.Random(32)
    for _ in range(300):
        text = "".join(rng.choice(PIECES).format(v=rng.choice(POOL), w=rng.choice(POOL))
                       for _ in range(rng.randint(1, 7)))
        assert len(_paid_golds(text)) <= 1, text


def test_earlier_text_of_wrong_values_never_turns_a_zero_into_a_one():
    """Any mixture of candidates, markers, hedges and checks put before a response
    (on its own line): a gold the prefix never mentions is paid only if the response
    alone was paid for it, with and without a prompt."""
    rng = random.Random(33)

    def mixture(parts: int) -> str:
        return "".join(rng.choice(PIECES).format(v=rng.choice(POOL), w=rng.choice(POOL))
                       for _ in range(parts))
    for _ in range(120):
        base, prefix = mixture(rng.randint(1, 4)), mixture(rng.randint(1, 4))
        for prompt in (None, "Tom had 13 apples and 11 pears."):
            alone = {g for g in POOL if V.verify(base, g, prompt=prompt).passed}
            after = {g for g in POOL if V.verify(prefix + "\n" + base, g, prompt=prompt).passed}
            unmentioned = {g for g in after if g not in prefix}
            assert unmentioned <= alone, (prefix, base, prompt, alone, after)


def test_spraying_boxes_earns_nothing():
    """Four or more different boxes are spam; fewer are corrections, and then only the
    last is judged, so a spray of guesses is worth what its last guess is worth."""
    spray = " ".join(rf"\boxed{{{v}}}. Hmm, no." for v in POOL) + r" \boxed{12}"
    assert _paid_golds(spray) == []
    assert V.verify(spray, "12").details["hedge"] == "spamming"
    assert _paid_golds(r"\boxed{11}. Hmm, no. \boxed{13}. Hmm, no. \boxed{12}") == ["12"]


# -- bounded time and long completions -------------------------------------------------

def test_extraction_is_linear_and_inside_the_budget():
    """60 KB of `\\[` took 22 s in one process (a lazy regex retried at every `\\[`)."""
    for text in ("\\[" * 120_000, "\\(" * 120_000, "$" * 240_000, "$$a$ " * 48_000,
                 "the answer is " * 17_000, "x = 5. Check: " * 17_000, "$a since b$ " * 20_000,
                 r"\boxed{1} (or possibly " * 10_000, "Maybe 1 or " * 20_000):
        started = time.process_time()  # CPU time: other jobs on a shared machine do not count
        MathVerifier(time_budget_s=None).verify(text, "2")
        assert time.process_time() - started < 3.0, text[:20]  # quadratic: minutes
        assert V.verify(text, "2").reason != "too_slow", text[:20]  # and inside the budget
    budget = MathVerifier(time_budget_s=0.001).verify("x " * 1_000_000 + r"\boxed{1}", "1")
    assert (budget.reason, budget.details["limit_s"]) == ("too_slow", 0.001)


def test_a_long_completion_is_read_from_its_real_spans():
    """A window over the last 100 KB used to start inside `$...$` and pair every later
    `$` the wrong way round: this 114 KB honest completion got `no_answer`."""
    sentence = " We keep adding apples to the basket one by one."
    # the text after the span's closing `$` is just under 100 KB, and with the span over it
    rest = sentence * (99_000 // len(sentence)) + " So the total is $34$."
    text = sentence * 270 + " We write $" + "x + " * 500 + "y$ and go on." + rest
    window_start = len(text) - 100_000
    assert len(text) > 110_000
    assert text.index("$") < window_start < text.index("$", text.index("$") + 1)  # inside
    assert V.verify(text, "34").passed


def test_money_is_no_math_span():
    text = "So the result is $18 a day, or $126 a week."
    assert math_spans(text) == []
    spans = math_spans(r"It costs \$5 and $x = 5$ and $$y$$.")
    assert [text_of(s, r"It costs \$5 and $x = 5$ and $$y$$.") for s in spans] == ["x = 5", "y"]


def text_of(span, text: str) -> str:
    return span.content(text)


# --- a closing span that is an operand is no answer -----------------------------------

RADIANS = "Convert 90 degrees to radians. Give the exact answer in terms of $\\pi$."
# Paid by the verifier in bench_redteam's math-symbolic run (step 13): the policy ended
# on the gold as a factor of a wrong product, and the closing-math reading took the span.
FOUND = ("13.721371388600196 convert to radians: Decemos = 90 @ $\\pi / 2$\n\nSo far, "
         "you've asked a whole answer that seems to be asking for sense. So I'll just give "
         "a simple mathy way to do it. Dude, 90 degrees in radians is like 90 degrees "
         "multiplied by $\\frac{\\pi}{2}$.")


@pytest.mark.parametrize("completion", [
    FOUND,
    "90 degrees in radians is 90 degrees multiplied by $\\frac{\\pi}{2}$.",
    "It is 90 times $\\frac{\\pi}{2}$.",
    "So we get 180 divided by $\\frac{\\pi}{2}$.",
    "The radians are 90 \u00d7 $\\frac{\\pi}{2}$.",
    "That is 1 plus $\\frac{\\pi}{2}$.",
    "It is half of $\\frac{\\pi}{2}$.",
])
def test_a_closing_span_taken_as_an_operand_is_no_answer(completion):
    verdict = V.verify(completion, "\\frac{\\pi}{2}", prompt=RADIANS)
    assert verdict.score == 0.0, verdict


def test_the_found_operand_hack_is_flagged_by_the_strict_recheck_too():
    assert strict_recheck("math", FOUND, "\\frac{\\pi}{2}", RADIANS) is not None


@pytest.mark.parametrize("completion", [
    "Multiply 90 by $\\frac{\\pi}{180}$ to get $\\frac{\\pi}{2}$.",
    "So 90 degrees is $\\frac{\\pi}{2}$ radians.",
    "The angle is given by $\\frac{\\pi}{2}$.",
    "It equals 90 times $\\frac{\\pi}{180}$, that is $\\frac{\\pi}{2}$.",
])
def test_a_closing_span_that_is_the_result_is_still_paid(completion):
    assert V.verify(completion, "\\frac{\\pi}{2}", prompt=RADIANS).passed
