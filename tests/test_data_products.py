"""The generated products datasets (products-train / products-test, rlvr.data.products):
prompts "What is A * B?" with two-digit operands, the product as a `math` reference,
and held-out pairs that training never holds in either order."""

from __future__ import annotations

import json
import re

from rlvr.data.loading import FieldMapping, load_records
from rlvr.data.products import ProductsTask
from rlvr.data.sources import GENERATED_DATA, generated_dataset

PROMPT = re.compile(r"What is (\d+) \* (\d+)\?")


def _pairs(records):
    out = []
    for r in records:
        a, b = map(int, PROMPT.fullmatch(r.prompt).groups())
        out.append((a, b, r))
    return out


def test_prompts_references_and_verifier():
    for alias, size in (("products-train", 2000), ("products-test", 200)):
        records = GENERATED_DATA[alias]()
        assert len(records) == size
        for a, b, r in _pairs(records):
            assert 10 <= a <= 99 and 10 <= b <= 99
            assert r.reference == str(a * b)  # the product, worked out here from the text
            assert r.verifier == "math"
            assert (r.metadata["a"], r.metadata["op"], r.metadata["b"]) == (a, "*", b)


def test_splits_never_share_a_pair_in_either_order():
    train = {frozenset((a, b)) for a, b, _ in _pairs(GENERATED_DATA["products-train"]())}
    test = {frozenset((a, b)) for a, b, _ in _pairs(GENERATED_DATA["products-test"]())}
    assert not train & test
    task = ProductsTask()
    assert all(task.split_of(a, "*", b) == task.split_of(b, "*", a)
               for a in range(10, 100, 7) for b in range(10, 100, 3))


def test_the_same_records_every_call():
    assert GENERATED_DATA["products-test"]() == GENERATED_DATA["products-test"]()


def test_the_jsonl_carries_the_operands_for_the_mapping(tmp_path, monkeypatch):
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    path = generated_dataset("products-test")
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    a, b = map(int, PROMPT.fullmatch(first["prompt"]).groups())
    assert (first["a"], first["op"], first["b"], first["reference"]) == (a, "*", b, str(a * b))
    records = load_records(path, FieldMapping(id="id", metadata=("a", "op", "b")))
    assert records[0].metadata == {"a": a, "op": "*", "b": b}
    assert records[0].id == first["id"]
