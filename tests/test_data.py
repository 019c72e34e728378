"""Task loading with field mappings, bad rows named by file and line, and the
arithmetic generator's disjoint splits."""

from __future__ import annotations

import json

import pytest

from rlvr.data import ArithmeticTask, DataError, FieldMapping, load_records


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_plain_records(tmp_path):
    path = _jsonl(tmp_path / "t.jsonl", [
        {"prompt": "1+1=", "reference": "2", "verifier": "exact"},
        {"prompt": [{"role": "user", "content": "2+2?"}], "reference": "4", "verifier": "exact"},
    ])
    records = load_records(path)
    assert [r.reference for r in records] == ["2", "4"]
    assert records[0].id == "t:1" and records[1].prompt[0]["content"] == "2+2?"


def test_gsm8k_mapping_on_the_real_file(shared_data):
    mapping = FieldMapping(prompt="question", reference="answer", reference_transform="gsm8k")
    records = load_records(shared_data / "gsm8k" / "test.jsonl", mapping,
                           default_verifier="exact", limit=5)
    assert records[0].reference == "18"  # Janet's ducks: 16 - 3 - 4 = 9 eggs, 9 * $2
    assert len(records) == 5 and all(r.verifier == "exact" for r in records)


def test_template_id_and_metadata(tmp_path):
    path = _jsonl(tmp_path / "t.jsonl", [{"q": "2*3", "a": 6, "uid": "p1", "meta": {"lvl": 2}}])
    mapping = FieldMapping(prompt_template="Q: {q}\nA:", reference="a", id="uid",
                           reference_transform="str", metadata=("meta.lvl",))
    [record] = load_records(path, mapping, default_verifier="exact")
    assert record.prompt == "Q: 2*3\nA:" and record.reference == "6"
    assert record.id == "p1" and record.metadata == {"meta.lvl": 2}


@pytest.mark.parametrize("rows,message", [
    ([{"prompt": "x", "reference": "1", "verifier": "exact"}, {"prompt": "", "reference": "1",
      "verifier": "exact"}], "t.jsonl:2: field 'prompt' must be non-empty"),
    ([{"prompt": "x", "verifier": "exact"}], "t.jsonl:1: missing field 'reference'"),
    ([{"prompt": "x", "reference": "1", "verifier": "nope"}], "t.jsonl:1: field 'verifier': unknown verifier"),
    ([{"prompt": "x", "reference": {"a": 1}, "verifier": "exact"}],
     "t.jsonl:1: invalid reference for verifier 'exact'"),
    ([{"prompt": "x", "reference": "1"}], "t.jsonl:1: missing field 'verifier'"),
    ([[1, 2]], "t.jsonl:1: expected an object"),
])
def test_bad_rows_name_file_and_line(tmp_path, rows, message):
    path = _jsonl(tmp_path / "t.jsonl", rows)
    with pytest.raises(DataError) as info:
        load_records(path)
    assert message in str(info.value)


def test_malformed_json_line(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"prompt": "x", "reference": "1", "verifier": "exact"}\n{"prompt": \n')
    with pytest.raises(DataError, match=r"t\.jsonl:2: malformed JSON"):
        load_records(path)


def test_gsm8k_transform_failure_names_row(tmp_path):
    path = _jsonl(tmp_path / "g.jsonl", [{"question": "q", "answer": "no final line"}])
    mapping = FieldMapping(prompt="question", reference="answer", reference_transform="gsm8k")
    with pytest.raises(DataError, match=r"g\.jsonl:1: .*gsm8k transform failed"):
        load_records(path, mapping, default_verifier="exact")


def test_unsupported_and_missing(tmp_path):
    (tmp_path / "t.csv").write_text("a,b\n")
    with pytest.raises(DataError, match="unsupported format"):
        load_records(tmp_path / "t.csv")
    with pytest.raises(DataError, match="no such file"):
        load_records(tmp_path / "none.jsonl")


def test_arithmetic_answers_and_disjoint_splits():
    task = ArithmeticTask(min_digits=1, max_digits=2, ops=("+", "-", "*"))
    train = task.generate(500, "train", seed=1)
    test = task.generate(200, "test", seed=1)
    assert not {r.id for r in train} & {r.id for r in test}
    # a different seed draws other problems but never crosses the split
    assert not {r.id for r in task.generate(500, "train", seed=2)} & {r.id for r in test}
    for record in train + test:
        a, op, b = record.metadata["a"], record.metadata["op"], record.metadata["b"]
        expected = {"+": a + b, "-": a - b, "*": a * b}[op]
        assert record.reference == str(expected) and record.prompt == f"{a}{op}{b}="
        assert int(record.reference) >= 0 or op != "-"
    assert task.generate(50, "test", seed=3) == task.generate(50, "test", seed=3)


def test_arithmetic_rejects_impossible_requests():
    with pytest.raises(ValueError, match="cannot draw"):
        ArithmeticTask(max_digits=1, ops=("+",)).generate(1000, "test")
    with pytest.raises(ValueError, match="ops"):
        ArithmeticTask(ops=("/",))
