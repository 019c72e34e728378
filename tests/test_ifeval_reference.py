"""Every IFEval prompt parses into a valid reference; bad references are rejected with
errors that name the field."""

from __future__ import annotations

import json

import pytest

from rlvr.verifiers import InvalidReference
from rlvr.verifiers.ifeval import IfevalVerifier, parse_reference

V = IfevalVerifier()


def test_every_shared_ifeval_prompt_is_a_valid_reference(shared_data):
    rows = [json.loads(line) for line in
            (shared_data / "ifeval" / "input_data.jsonl").read_text().splitlines()]
    assert len(rows) == 541
    counted = 0
    for row in rows:
        parsed = parse_reference(row)
        assert [spec.id for spec, _ in parsed] == row["instruction_id_list"]
        counted += len(parsed)
        V.check_reference(row)
    assert counted == 834  # the README's instruction total


def test_none_valued_kwargs_are_dropped_as_ifeval_does():
    # Hugging Face copies carry every kwarg name on every row, null where unused
    reference = {"instruction_id_list": ["punctuation:no_comma", "startend:end_checker"],
                 "kwargs": [{"num_words": None, "end_phrase": None},
                            {"end_phrase": "bye", "num_words": None}]}
    assert V.verify("ok bye", reference).passed is True


@pytest.mark.parametrize("reference,message", [
    ({"instruction_id_list": ["nope:unknown"], "kwargs": [{}]}, "unknown instruction id"),
    ({"instruction_id_list": ["keywords:frequency"],
      "kwargs": [{"keyword": "a", "relation": "at least"}]}, "missing kwarg(s) ['frequency']"),
    ({"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{"extra": 1}]},
     "unknown kwarg(s) ['extra']"),
    ({"instruction_id_list": ["punctuation:no_comma", "startend:quotation"], "kwargs": [{}]},
     "has 2 entries but 'kwargs' has 1"),
    ({"instruction_id_list": ["length_constraints:number_words"],
      "kwargs": [{"num_words": 3, "relation": "at most"}]}, "must be one of"),
    ({"instruction_id_list": ["length_constraints:number_words"],
      "kwargs": [{"num_words": "3", "relation": "at least"}]}, "must be an integer"),
    ({"instruction_id_list": ["keywords:letter_frequency"],
      "kwargs": [{"letter": "ab", "let_frequency": 1, "let_relation": "at least"}]},
     "single character"),
    ({"instruction_id_list": ["language:response_language"], "kwargs": [{"language": "xx"}]},
     "not a language code"),
    ({"instruction_id_list": ["keywords:existence"], "kwargs": [{"keywords": ["(unclosed"]}]},
     "not a valid regular expression"),
    ({"instruction_id_list": ["length_constraints:nth_paragraph_first_word"],
      "kwargs": [{"num_paragraphs": 2, "nth_paragraph": 3, "first_word": "a"}]},
     "nth_paragraph must be between"),
    ({"instruction_id_list": []}, "non-empty list"),
    ("not an object", "must be an object"),
])
def test_invalid_references_raise(reference, message):
    with pytest.raises(InvalidReference) as info:
        V.verify("any text", reference)
    assert message in str(info.value)


def test_kwargs_may_be_omitted_when_no_instruction_takes_any():
    assert V.verify("fine", {"instruction_id_list": ["punctuation:no_comma"]}).passed is True


def test_invalid_reference_is_an_error_line_in_rlvr_verify(tmp_path):
    from cli_helpers import run_cli

    cases = tmp_path / "cases.jsonl"
    good = {"verifier": "ifeval", "completion": "no commas",
            "reference": {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}}
    bad = {"verifier": "ifeval", "completion": "x",
           "reference": {"instruction_id_list": ["bogus:id"], "kwargs": [{}]}}
    cases.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    result = run_cli("verify", "--input", str(cases), "--workers", "1")
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.returncode == 1
    assert lines[0]["score"] == 1.0 and lines[0]["passed"] is True
    assert lines[1]["score"] is None and "unknown instruction id 'bogus:id'" in lines[1]["error"]


def test_docs_list_every_instruction_id():
    from conftest import REPO
    from rlvr.verifiers.ifeval import all_instructions

    doc = (REPO / "docs" / "rewards.md").read_text()
    missing = [i for i in all_instructions() if f"`{i}`" not in doc]
    assert missing == []
