"""Each IFEval instruction id with a following and a breaking response, worked out by
hand from IFEval's definitions (strict mode), plus loose-mode cases."""

from __future__ import annotations

import pytest

from rlvr.verifiers.ifeval import IfevalVerifier, all_instructions

STRICT, LOOSE = IfevalVerifier(), IfevalVerifier(loose=True)


def ref(instruction_id, **kwargs):
    return {"prompt": "p", "instruction_id_list": [instruction_id], "kwargs": [kwargs]}


FRENCH = "Bonjour, je m'appelle Marie et j'habite à Paris depuis dix ans avec ma famille."
ENGLISH_UP = "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG AND RUNS AWAY INTO THE FOREST."

# (id, kwargs, a response that follows, a response that does not)
CASES = [
    ("change_case:capital_word_frequency", {"capital_frequency": 2, "capital_relation": "at least"},
     "This is VERY IMPORTANT news.", "This is VERY important news."),
    ("change_case:capital_word_frequency", {"capital_frequency": 2, "capital_relation": "less than"},
     "Only ONE shout here.", "DON'T do that."),  # Treebank: "DO" + "N'T" = 2 capital tokens
    ("change_case:english_capital", {}, ENGLISH_UP, ENGLISH_UP.capitalize()),
    ("change_case:english_lowercase", {}, ENGLISH_UP.lower(), ENGLISH_UP.lower() + " Yes."),
    ("combination:repeat_prompt", {"prompt_to_repeat": "Write a poem about cats."},
     "  write a POEM about cats. Here it is: meow.", "Sure! Write a poem about cats."),
    ("combination:two_responses", {}, "First answer.\n******\nSecond answer.",
     "Same.\n******\nSame."),
    ("combination:two_responses", {}, "******A******B", "A******\n******B"),
    ("detectable_content:number_placeholders", {"num_placeholders": 2},
     "Dear [name], at [address].", "Dear [name], at home."),
    ("detectable_content:postscript", {"postscript_marker": "P.S."},
     "Hello.\n\nP.S. See you soon.", "Hello. PS see you."),
    ("detectable_content:postscript", {"postscript_marker": "P.P.S"},
     "Hi.\np. p. s. more", "Hi.\nP.S. only one"),
    ("detectable_format:constrained_response", {}, "I think... My answer is maybe.",
     "My answer is probably."),
    ("detectable_format:json_format", {}, '```json\n{"a": [1, 2]}\n```', '{"a": 1} trailing'),
    ("detectable_format:multiple_sections", {"section_spliter": "SECTION", "num_sections": 2},
     "SECTION 1\nIntro\nSECTION 2\nBody", "SECTION 1\nIntro only\nSection 2 lower"),
    ("detectable_format:number_bullet_lists", {"num_bullets": 2}, "* one\n- two\nend",
     "* one\n* two\n* three"),
    ("detectable_format:number_bullet_lists", {"num_bullets": 1}, "* one\n**bold** line",
     "no bullets"),  # "**bold**" is not a bullet ([^*] after the first star)
    ("detectable_format:number_highlighted_sections", {"num_highlights": 2},
     "*one* and **two**", "*one* and ** ** and **"),
    ("detectable_format:title", {}, "<<My Title>>\nText", "<< >> no title\n<<broken\n>>"),
    ("keywords:existence", {"keywords": ["cat", "dog"]}, "A CAT met a dog.", "A cat met a bird."),
    ("keywords:forbidden_words", {"forbidden_words": ["bad"]}, "A badge is fine.",
     "That is BAD."),
    ("keywords:frequency", {"keyword": "war", "frequency": 2, "relation": "at least"},
     "War and warfare.", "Peace and war."),  # substring match: "warfare" counts
    ("keywords:frequency", {"keyword": "war", "frequency": 2, "relation": "less than"},
     "One war.", "war war"),
    ("keywords:letter_frequency", {"letter": "q", "let_frequency": 2, "let_relation": "at least"},
     "Quick quiz", "Quick"),
    ("keywords:letter_frequency", {"letter": "e", "let_frequency": 3, "let_relation": "less than"},
     "tree", "Eeee"),
    ("language:response_language", {"language": "fr"}, FRENCH, ENGLISH_UP.lower()),
    ("length_constraints:nth_paragraph_first_word",
     {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "then"},
     "First part.\n\n\"Then, the second.", "First part.\n\nAnd then the second."),
    ("length_constraints:nth_paragraph_first_word",
     {"num_paragraphs": 2, "nth_paragraph": 1, "first_word": "one"},
     "One.\n\nTwo.", "One.\n\nTwo.\n\nThree."),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "A\n***\nB",
     "A\n***\n***\nB"),
    ("length_constraints:number_paragraphs", {"num_paragraphs": 2}, "***\nA\n***\nB\n***",
     "A\n\nB"),
    ("length_constraints:number_sentences", {"num_sentences": 3, "relation": "at least"},
     "One. Two! Three?", "Dr. Smith came. He left."),
    ("length_constraints:number_sentences", {"num_sentences": 2, "relation": "less than"},
     "Mr. Brown met J. R. Tolkien in the U.S. today.", "A. B is here. C went."),
    ("length_constraints:number_words", {"num_words": 4, "relation": "at least"},
     "don't stop me now", "one two three"),  # "don't" is two \w+ words
    ("length_constraints:number_words", {"num_words": 3, "relation": "less than"},
     "two words", "one two three"),
    ("punctuation:no_comma", {}, "No commas here.", "One, two."),
    ("startend:end_checker", {"end_phrase": "Any other questions?"},
     'Done. any other questions?"  ', "Any other questions? Thanks."),
    ("startend:quotation", {}, ' "quoted text" ', '"unbalanced'),
]


def test_every_ifeval_id_is_covered():
    ifeval_ids = {i for i in all_instructions() if not i.startswith("rlvr:")}
    assert len(ifeval_ids) == 25
    assert {c[0] for c in CASES} == ifeval_ids


@pytest.mark.parametrize("instruction_id,kwargs,good,bad", CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_strict(instruction_id, kwargs, good, bad):
    followed = STRICT.verify(good, ref(instruction_id, **kwargs))
    broken = STRICT.verify(bad, ref(instruction_id, **kwargs))
    assert (followed.score, followed.passed) == (1.0, True)
    assert (broken.score, broken.passed) == (0.0, False)


def test_empty_response_follows_nothing_strict():
    # "no comma" holds for "", but IFEval counts an empty response as following nothing
    assert STRICT.verify("  ", ref("punctuation:no_comma")).score == 0.0
    assert STRICT.verify("  ", ref("punctuation:no_comma")).reason == "empty_response"


def test_score_is_fraction_followed():
    reference = {"prompt": "p", "instruction_id_list": ["punctuation:no_comma",
                 "startend:quotation", "keywords:existence"],
                 "kwargs": [{}, {}, {"keywords": ["x"]}]}
    verdict = STRICT.verify("no comma, oops x", reference)
    assert verdict.score == pytest.approx(1 / 3)
    assert [i["followed"] for i in verdict.details["instructions"]] == [False, False, True]


@pytest.mark.parametrize("instruction_id,kwargs,response", [
    # a chatty first line ("Sure!") breaks strict but is dropped by a loose variant
    ("combination:repeat_prompt", {"prompt_to_repeat": "Say hi."}, "Sure!\nSay hi. Hi!"),
    # a closing remark on the last line
    ("startend:end_checker", {"end_phrase": "Bye."}, "Text. Bye.\nLet me know!"),
    # markdown stars around the whole answer
    ("startend:quotation", {}, '**"quoted"**'),
    ("detectable_format:json_format", {}, 'Here is the JSON:\n{"a": 1}'),
])
def test_loose_accepts_what_strict_rejects(instruction_id, kwargs, response):
    assert STRICT.verify(response, ref(instruction_id, **kwargs)).passed is False
    verdict = LOOSE.verify(response, ref(instruction_id, **kwargs))
    assert verdict.passed is True and verdict.details["mode"] == "loose"


def test_loose_still_rejects_a_real_violation():
    assert LOOSE.verify("a, b\nc, d\ne, f", ref("punctuation:no_comma")).passed is False


def test_undetectable_language_follows_as_in_ifeval_unless_turned_off():
    reference = ref("language:response_language", language="hi")
    assert STRICT.verify("12345 !!! 678", reference).passed is True  # IFEval's semantics
    hardened = IfevalVerifier(unknown_language_follows=False)
    assert hardened.verify("12345 !!! 678", reference).passed is False
    # the option changes nothing for text langdetect can classify
    assert hardened.verify(FRENCH, ref("language:response_language", language="fr")).passed
