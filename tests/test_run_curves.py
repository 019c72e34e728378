"""rlvr.runs.curves: the series read from a hand-made run directory, and the PNG."""

from __future__ import annotations

import json
import struct
import sys
from pathlib import Path

import pytest

from rlvr.runs.curves import draw_curves, load_series

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def write_lines(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    run = tmp_path / "run"
    run.mkdir()
    write_lines(run / "metrics.jsonl", [
        {"step": 1, "time/step": 2.0, "reward/mean": 0.125, "response_length/mean": 20.0},
        {"step": 2, "time/step": 3.0, "reward/mean": 0.25, "response_length/mean": 18.0},
        # a step without a reward still advances the clock
        {"step": 3, "time/step": 1.5, "response_length/mean": 15.0},
        {"step": 4, "time/step": 0.5, "reward/mean": 0.5, "response_length/mean": 12.0}])
    write_lines(run / "evals.jsonl", [
        {"step": 0, "train_seconds": 0.0, "wall_seconds": 9.0, "greedy/accuracy": 0.2,
         "pass@1": 0.18, "pass@4": 0.4, "pass@10": 0.6, "maj@4": 0.3, "maj@1": 0.18},
        {"step": 4, "train_seconds": 7.25, "wall_seconds": 30.0, "greedy/accuracy": 0.55,
         "pass@1": 0.5, "pass@4": 0.7, "pass@10": 0.8, "maj@4": 0.6}])
    return run


def test_series_follow_the_training_clock(run_dir: Path) -> None:
    curves = load_series(run_dir)
    # cumulative time/step: 2, 2+3, 2+3+1.5, 2+3+1.5+0.5; step 3 has no reward
    assert curves.reward == ([2.0, 5.0, 7.0], [0.125, 0.25, 0.5])
    assert curves.length == ([2.0, 5.0, 6.5, 7.0], [20.0, 18.0, 15.0, 12.0])
    assert curves.accuracy == ([0.0, 7.25], [0.2, 0.55])
    # maj before pass, k in numeric order (pass@10 after pass@4); maj@1 (= pass@1) left out
    assert list(curves.at_k) == ["maj@4", "pass@1", "pass@4", "pass@10"]
    assert curves.at_k["pass@10"] == ([0.0, 7.25], [0.6, 0.8])


def test_the_training_clock_wins_over_summed_step_times(tmp_path: Path) -> None:
    write_lines(tmp_path / "metrics.jsonl", [
        {"step": 1, "time/step": 2.0, "time/train_seconds": 2.5, "reward/mean": 0.5},
        # a line without the clock falls back to the sum of step times so far
        {"step": 2, "time/step": 3.0, "reward/mean": 0.75}])
    assert load_series(tmp_path).reward == ([2.5, 5.0], [0.5, 0.75])


def test_missing_files_give_empty_curves(tmp_path: Path) -> None:
    curves = load_series(tmp_path)
    assert curves.reward == ([], []) and curves.accuracy == ([], []) and curves.at_k == {}


def test_png_with_a_peer(run_dir: Path, tmp_path: Path) -> None:
    peer = load_series(run_dir)
    out = draw_curves(tmp_path / "curve.png", {"rlvr": load_series(run_dir), "trl": peer},
                      title="test")
    data = out.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    # IHDR follows the signature: length, type, then width and height (big-endian)
    assert data[12:16] == b"IHDR"
    assert struct.unpack(">II", data[16:24]) == (800, 900)  # figsize 8 x 9 at 100 dpi


def test_missing_matplotlib_names_the_extra(run_dir: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import now raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'rlvr\[plot\]'"):
        draw_curves(tmp_path / "curve.png", {"rlvr": load_series(run_dir)})
