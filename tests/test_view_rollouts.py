"""rlvr.view.rollouts: a step's lines found by byte bisection equal the lines a full
read filters by step, for files with gaps, long lines, a crash's cut tail, malformed
lines, growth and replacement."""

from __future__ import annotations

import json
import os
import random

import pytest

from rlvr.view import rollouts as rollouts_module
from rlvr.view.rollouts import RolloutsFile


def write_lines(path, records, tail: str = ""):
    path.write_text("".join(json.dumps(r) + "\n" for r in records) + tail, encoding="utf-8")


def run_records(steps, rng, per_step=(1, 9), long_every=7):
    """Attempts for the given steps; every `long_every`-th completion is longer than the
    reader's block, so a probe lands inside a line and has to read on."""
    records = []
    for step in steps:
        for sample in range(rng.randint(*per_step)):
            size = rollouts_module.READ_BLOCK + 50 if len(records) % long_every == 3 else rng.randint(1, 300)
            records.append({"step": step, "prompt_id": f"p{rng.randint(0, 5)}", "sample": sample,
                            "completion": "x" * size})
    return records


def by_step(records, step):
    return [r for r in records if r["step"] == step]


def test_every_step_equals_a_full_filter_with_gaps_and_long_lines(tmp_path):
    rng = random.Random(3)
    steps = [1, 2, 3, 5, 6, 9, 10, 11, 17]  # gaps: steps a max_seconds run or a resume skips
    records = run_records(steps, rng)
    path = tmp_path / "rollouts.jsonl"
    write_lines(path, records)
    reader = RolloutsFile(path)
    for step in range(0, 20):
        got = reader.read_step(step)
        assert got.records == by_step(records, step), step
        assert got.problems == []
    assert reader.first_and_last_step() == (1, 17)
    assert reader.partial_tail() == 0


def test_small_blocks_make_every_probe_cross_lines(tmp_path, monkeypatch):
    # With a 16-byte block every probe reads several blocks: the same answers.
    monkeypatch.setattr(rollouts_module, "READ_BLOCK", 16)
    rng = random.Random(5)
    records = run_records(range(1, 30), rng, per_step=(1, 4), long_every=1000)
    path = tmp_path / "rollouts.jsonl"
    write_lines(path, records)
    reader = RolloutsFile(path)
    for step in range(1, 31):
        assert reader.read_step(step).records == by_step(records, step)


def test_a_cut_last_line_is_reported_not_read(tmp_path):
    records = [{"step": 1, "completion": "a"}, {"step": 2, "completion": "b"}]
    path = tmp_path / "rollouts.jsonl"
    write_lines(path, records, tail='{"step": 2, "completion": "cut mid-wr')
    reader = RolloutsFile(path)
    assert reader.partial_tail() == len('{"step": 2, "completion": "cut mid-wr')
    assert reader.read_step(2).records == [records[1]]
    assert reader.first_and_last_step() == (1, 2)


def test_a_malformed_line_inside_a_step_is_a_named_problem(tmp_path):
    path = tmp_path / "rollouts.jsonl"
    good = json.dumps({"step": 3, "completion": "ok"}) + "\n"
    text = (json.dumps({"step": 2, "completion": "x"}) + "\n" + good + "{not json\n" + good
            + json.dumps({"step": 4, "completion": "y"}) + "\n")
    path.write_text(text)
    got = RolloutsFile(path).read_step(3)
    assert [r["completion"] for r in got.records] == ["ok", "ok"]
    offset = text.index("{not json")
    assert [p.offset for p in got.problems] == [offset]
    assert f"byte {offset}" in got.problems[0].message


def test_a_growing_file_is_followed_and_a_replaced_one_rereads(tmp_path):
    rng = random.Random(9)
    path = tmp_path / "rollouts.jsonl"
    first = run_records([1, 2, 3], rng)
    write_lines(path, first)
    reader = RolloutsFile(path)
    assert reader.read_step(3).records == by_step(first, 3)
    more = run_records([4, 5], rng)
    with open(path, "a") as handle:  # the trainer appends the next steps
        handle.write("".join(json.dumps(r) + "\n" for r in more))
    assert reader.read_step(5).records == by_step(more, 5)
    assert reader.first_and_last_step() == (1, 5)
    # a resume rewrites the file (atomically: a new inode) without steps past its checkpoint
    kept = [r for r in first if r["step"] <= 2]
    replacement = tmp_path / "new.jsonl"
    write_lines(replacement, kept)
    os.replace(replacement, path)
    assert reader.read_step(3).records == []
    assert reader.read_step(2).records == by_step(first, 2)


def test_find_returns_the_lines_holding_the_text(tmp_path):
    records = [{"step": s, "prompt_id": f"q{s % 3}", "completion": "c"} for s in range(1, 10)]
    path = tmp_path / "rollouts.jsonl"
    write_lines(path, records, tail='{"step": 10, "prompt_id": "q1"')  # cut: not returned
    found = list(RolloutsFile(path).find('"prompt_id": "q1"'))
    assert [r["step"] for r in found] == [1, 4, 7]
    assert list(RolloutsFile(path).find('"prompt_id": "q1"', limit=2)) == found[:2]


@pytest.mark.parametrize("content", ["", '{"step": 1, "comp'])
def test_empty_or_only_cut_files_have_no_steps(tmp_path, content):
    path = tmp_path / "rollouts.jsonl"
    path.write_text(content)
    reader = RolloutsFile(path)
    assert reader.first_and_last_step() is None
    assert reader.read_step(1).records == []
    assert list(reader.find("step")) == []


def test_a_missing_file_reads_as_empty(tmp_path):
    reader = RolloutsFile(tmp_path / "rollouts.jsonl")
    assert not reader.exists() and reader.read_step(1).records == [] and reader.partial_tail() == 0
