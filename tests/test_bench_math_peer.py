"""benchmarks/verifiers/bench_math_peer_cases.py reads (gold, pred, expected) triples from test
files without running them, and grades them with rlvr's defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.verifiers import bench_math_peer_cases

PEER_TESTS = '''
import pytest
open("/nonexistent/never-run", "w")  # parsed, never executed

@pytest.mark.parametrize("gold,pred,expected", [
    ("5", "\\\\boxed{5}", 1),
    ("5", "6", 0),
    pytest.param("5", "5", 1, id="a param, not a plain triple"),
])
def test_simple(gold, pred, expected):
    pass

@pytest.mark.parametrize("gold, pred, expected, precision", [("0.5", "\\\\frac12", 1, 6)])
def test_with_settings(gold, pred, expected, precision):
    pass

@pytest.mark.parametrize("x,y", [(1, 2)])
def test_other(x, y):
    pass
'''


def test_reads_literal_triples_only(tmp_path: Path):
    (tmp_path / "test_peer.py").write_text(PEER_TESTS)
    assert bench_math_peer_cases.read_cases(tmp_path) == [
        ("5", "\\boxed{5}", True), ("5", "6", False), ("0.5", "\\frac12", True)]


def test_prints_agreement_and_false_positives(tmp_path: Path, capsys):
    (tmp_path / "test_peer.py").write_text(PEER_TESTS)
    bench_math_peer_cases.main([str(tmp_path)])
    # by hand: \boxed{5} for 5 paid, 6 for 5 not, \frac12 for 0.5 paid -> 3/3 agree
    assert capsys.readouterr().out.strip() == (
        "peer cases: 3 triples, agreement 1.000, correct answers paid 2/2, "
        "false positives 0/1")


def test_a_directory_without_tests_is_named(tmp_path: Path):
    with pytest.raises(SystemExit, match=str(tmp_path)):
        bench_math_peer_cases.read_cases(tmp_path)
