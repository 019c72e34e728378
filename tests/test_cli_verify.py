"""`rlvr verify` follows the JSONL contract of docs/contracts.md."""

from __future__ import annotations

import json

from cli_helpers import run_cli


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))


def test_batch_keeps_order_and_writes_one_line_per_input(tmp_path):
    cases = tmp_path / "cases.jsonl"
    _write(cases, [json.dumps({"verifier": "exact", "completion": c, "reference": r})
                   for c, r in [("Answer: 19", "19"), ("20", "19"), ("1,000", "1000")]])
    out = tmp_path / "verdicts.jsonl"
    result = run_cli("verify", "--input", str(cases), "--output", str(out), "--workers", "2")
    assert result.returncode == 0, result.stderr
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(x["score"], x["passed"]) for x in lines] == [(1.0, True), (0.0, False), (1.0, True)]
    assert lines[1]["reason"] == "wrong_answer"


def test_invalid_reference_gets_error_line_and_exit_1(tmp_path):
    cases = tmp_path / "cases.jsonl"
    _write(cases, [
        json.dumps({"verifier": "exact", "completion": "1", "reference": {"bad": 1}}),
        json.dumps({"verifier": "exact", "completion": "1", "reference": "1"}),
        json.dumps({"verifier": "nope", "completion": "1", "reference": "1"}),
        json.dumps({"completion": "1", "reference": "1"}),
    ])
    result = run_cli("verify", "--input", str(cases))
    assert result.returncode == 1
    lines = [json.loads(x) for x in result.stdout.splitlines()]
    assert len(lines) == 4
    assert lines[0]["score"] is None and "cases.jsonl:1" in lines[0]["error"]
    assert lines[1]["score"] == 1.0
    assert lines[2]["score"] is None and "unknown verifier" in lines[2]["error"]
    assert lines[3]["score"] is None and "missing field(s) verifier" in lines[3]["error"]


def test_malformed_json_exits_2_with_line_number(tmp_path):
    cases = tmp_path / "cases.jsonl"
    _write(cases, [json.dumps({"verifier": "exact", "completion": "1", "reference": "1"}),
                   '{"verifier": "exact", "completion": '])
    out = tmp_path / "out.jsonl"
    result = run_cli("verify", "--input", str(cases), "--output", str(out))
    assert result.returncode == 2
    assert "cases.jsonl:2" in result.stderr and "malformed JSON" in result.stderr
    assert not out.exists()


def test_one_off_prints_verdict_json():
    result = run_cli("verify", "exact", "--reference", "42", "--completion", "#### 42")
    assert result.returncode == 0, result.stderr
    verdict = json.loads(result.stdout)
    assert verdict["score"] == 1.0 and verdict["passed"] is True


def test_stdin_input(tmp_path):
    line = json.dumps({"verifier": "exact", "completion": "7", "reference": "8"})
    result = run_cli("verify", "--input", "-", stdin=line + "\n")
    assert result.returncode == 0
    assert json.loads(result.stdout)["score"] == 0.0


def test_missing_input_file_is_a_clear_error(tmp_path):
    result = run_cli("verify", "--input", str(tmp_path / "nope.jsonl"))
    assert result.returncode == 2 and "nope.jsonl" in result.stderr
