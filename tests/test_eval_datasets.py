"""Benchmark loaders map the published files to task records (values checked by hand
against the files' first rows)."""

from __future__ import annotations

import json

import pytest

from rlvr.evaluation.datasets import (MATH_INSTRUCTION, DatasetError, load_benchmark,
                                      load_dataset)


@pytest.mark.parametrize("name, count", [("gsm8k", 1319), ("math500", 500), ("aime24", 30),
                                         ("amc23", 40), ("ifeval", 541), ("humaneval", 164)])
def test_every_benchmark_loads_whole(shared_data, name, count):
    # check=True: every reference passes its verifier's check_reference
    records = load_benchmark(name, shared_data, check=True)
    assert len(records) == count
    assert len({r.id for r in records}) == count


def test_math_benchmarks_references_and_metadata(shared_data):
    gsm = load_benchmark("gsm8k", shared_data, limit=2, check=False)
    # Janet's ducks: "... #### 18"; second row (robe, 2 + 1 bolts): "#### 3".
    assert [r.reference for r in gsm] == ["18", "3"] and gsm[0].verifier == "math"
    assert gsm[0].prompt.startswith("Janet") and gsm[0].prompt.endswith(MATH_INSTRUCTION)
    m500 = load_benchmark("math500", shared_data, limit=1, check=False)[0]
    assert m500.id == "math500/test/precalculus/807.json"
    assert m500.metadata == {"subject": "Precalculus", "level": 2}
    amc = load_benchmark("amc23", shared_data, check=False)
    assert amc[0].reference == "27"  # published as 27.0
    assert sum(r.reference.startswith("-") for r in amc) == 1  # the one negative answer
    aime = load_benchmark("aime24", shared_data, limit=1, check=False)[0]
    assert (aime.id, aime.reference) == ("aime24/60", "204")


def test_ifeval_reference_is_the_three_published_fields(shared_data):
    record = load_benchmark("ifeval", shared_data, limit=1, check=False)[0]
    assert record.id == "ifeval/1000" and record.verifier == "ifeval"
    assert set(record.reference) == {"prompt", "instruction_id_list", "kwargs"}
    assert record.reference["instruction_id_list"][0] == "punctuation:no_comma"
    assert record.prompt == record.reference["prompt"]


def test_humaneval_comes_from_the_package():
    record = load_benchmark("humaneval", limit=1)[0]
    assert record.id == "HumanEval/0" and record.verifier == "code"
    assert record.reference["entry_point"] == "has_close_elements"
    assert "def check(candidate)" in record.reference["test"]
    assert record.prompt.lstrip().startswith("from typing import List")


def test_task_file_by_path_and_clear_errors(tmp_path):
    path = tmp_path / "tasks.jsonl"
    good = json.dumps({"prompt": "1+1?", "reference": "2", "verifier": "exact"}) + "\n"
    path.write_text(good)
    assert load_dataset(str(path))[0].reference == "2"
    path.write_text(good + "{broken\n")
    with pytest.raises(ValueError, match="tasks.jsonl:2"):
        load_dataset(str(path))
    with pytest.raises(DatasetError, match="neither a benchmark"):
        load_dataset("no-such-benchmark")


def test_published_gold_solutions_pass_their_own_references(shared_data):
    """The loaders' references against the datasets' own worked solutions, graded by the
    math verifier: every GSM8K solution ("... #### 18") passes, and all but a handful of
    MATH-500 solutions (two box an equation chain or offer "15 39/40 or 639/40", which
    the verifier rightly refuses)."""
    from rlvr.evaluation.runner import EvalSettings, grade_samples
    from rlvr.verifiers.pool import VerifierPool

    rows = {name: [json.loads(line) for line in (shared_data / path).open()]
            for name, path in [("gsm8k", "gsm8k/test.jsonl"), ("math500", "math500/test.jsonl")]}
    with VerifierPool(workers=2, preload=["math"]).start() as pool:
        rates = {}
        for name, field in [("gsm8k", "answer"), ("math500", "solution")]:
            records = load_benchmark(name, shared_data)
            solutions = {r.id: [row[field]] for r, row in zip(records, rows[name])}
            result = grade_samples(records, solutions, EvalSettings(greedy=False, n=1),
                                   pool=pool)
            rates[name] = result.metrics["pass@1"]
    assert rates["gsm8k"] == 1.0
    assert rates["math500"] >= 0.99
