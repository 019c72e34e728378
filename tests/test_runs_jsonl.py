"""rlvr.runs.read_jsonl: one streaming reader, a policy per caller."""

from __future__ import annotations

import json

import pytest

from rlvr.errors import UserError
from rlvr.runs import JsonlError, read_jsonl

GOOD = '{"step": 1}\n{"step": 2, "note": "a\u2028b"}\n'


def _write(tmp_path, text: str):
    path = tmp_path / "log.jsonl"
    path.write_bytes(text.encode("utf-8"))
    return path


def test_lines_come_numbered_and_blank_lines_are_skipped(tmp_path):
    path = _write(tmp_path, '{"step": 1}\n\n{"step": 2, "note": "a\u2028b"}\n')
    for policy in ("raise", "tail", "skip"):
        assert list(read_jsonl(path, policy)) == [(1, {"step": 1}),
                                                 (3, {"step": 2, "note": "a\u2028b"})]


def test_raise_names_file_and_line_even_for_a_torn_last_line(tmp_path):
    path = _write(tmp_path, GOOD + '{"step": 3, "cut')
    with pytest.raises(JsonlError, match=rf"{path}:3: malformed JSON") as caught:
        list(read_jsonl(path, "raise"))
    assert (caught.value.path, caught.value.line) == (path, 3)
    assert isinstance(caught.value, UserError) and isinstance(caught.value, ValueError)


def test_tail_ends_quietly_at_a_torn_last_line_only(tmp_path):
    torn = read_jsonl(_write(tmp_path, GOOD + '{"step": 3, "cut'), "tail")
    assert [n for n, _ in torn] == [1, 2] and torn.torn_tail
    middle = _write(tmp_path, '{"step": 1}\n{"step": 2, "cut\n{"step": 3}\n')
    with pytest.raises(JsonlError, match=r"log\.jsonl:2: malformed JSON"):
        list(read_jsonl(middle, "tail"))
    # a complete last line without its newline is a record, not a torn line
    whole = read_jsonl(_write(tmp_path, '{"step": 1}\n{"step": 2}'), "tail")
    assert [r["step"] for _, r in whole] == [1, 2] and not whole.torn_tail


def test_skip_counts_what_it_skipped(tmp_path):
    path = _write(tmp_path, '{"step": 1}\nnot json\n[1, 2]\n\xff\n{"step": 5}\n{"cut')
    path.write_bytes(path.read_bytes().replace("\xff".encode("utf-8"), b"\xff"))
    lines = read_jsonl(path, "skip")
    assert [n for n, _ in lines] == [1, 5]
    assert lines.bad_lines == [2, 3, 4] and lines.torn_tail


def test_objects_false_yields_any_json_value(tmp_path):
    path = _write(tmp_path, '[1, 2]\n"text"\n{"a": 1}\n')
    assert [r for _, r in read_jsonl(path, "raise", objects=False)] == [[1, 2], "text", {"a": 1}]
    with pytest.raises(JsonlError, match=r":1: expected a JSON object, got list"):
        list(read_jsonl(path, "raise"))


def test_missing_file(tmp_path):
    assert list(read_jsonl(tmp_path / "none.jsonl", "tail", missing_ok=True)) == []
    with pytest.raises(FileNotFoundError):
        list(read_jsonl(tmp_path / "none.jsonl", "tail"))
    with pytest.raises(ValueError, match="on_bad"):
        read_jsonl(tmp_path / "none.jsonl", "ignore")


def test_it_streams(tmp_path):
    """The reader is lazy: the first record arrives before a bad line further on is read."""
    path = _write(tmp_path, json.dumps({"step": 1}) + "\nbad\n")
    lines = iter(read_jsonl(path, "raise"))
    assert next(lines) == (1, {"step": 1})
    with pytest.raises(JsonlError):
        next(lines)


def test_the_viewer_shows_what_it_can_and_says_what_it_skipped(tmp_path):
    """rlvr view reads metrics.jsonl under the "skip" policy: the good lines are shown,
    the damaged one and the torn tail are named in the run's notes."""
    from rlvr.view.runinfo import ViewRun

    (tmp_path / "metrics.jsonl").write_bytes(
        b'{"step": 1}\n{"step": 2, "rew\n{"step": 3}\n{"step": 4, "cu')
    run = ViewRun.open(tmp_path)
    assert [r["step"] for r in run.metrics.read()] == [1, 3]
    notes = run.notes()
    metrics = tmp_path.resolve() / "metrics.jsonl"
    assert f"{metrics}: 1 malformed line(s), first at line 2; skipped" in notes
    assert any(n.startswith(f"{metrics}: the last line is incomplete") for n in notes)
