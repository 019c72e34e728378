"""benchmarks.headline.bench_multiturn reads a finished run's summary.json and config.yaml
into its headline line (the numbers here are written into a run directory by hand)."""

from __future__ import annotations

import json

import pytest

from benchmarks.headline.bench_multiturn import environment, headline, read_run


def _run(tmp_path, max_turns_row=True):
    row = lambda acc, after: {"greedy/accuracy": acc, "greedy/score": acc / 2,  # noqa: E731
                              "count": 32.0, **({"greedy/solved_after_feedback": after}
                                                if max_turns_row else {})}
    summary = {"eval": {"before": {"row": row(0.1875, 0.0)}, "after": {"row": row(0.9375, 0.8125)}},
               "train_seconds": 571.4, "steps": 58, "wall_seconds": 700.0}
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "config.yaml").write_text("episodes:\n  environment: guess_number\n")
    return tmp_path


def test_headline_from_a_run_directory(tmp_path):
    run = _run(tmp_path)
    result = read_run(run)
    assert (result["A"], result["B"], result["F0"], result["F1"]) == (0.1875, 0.9375, 0.0, 0.8125)
    assert (result["S"], result["N"], result["held_out"]) == (571.4, 58, 32)
    assert headline(environment(run), result) == (
        "multiturn: guess_number final-turn success 0.188 -> 0.938 in 571 s (58 steps), "
        "solved after feedback 0.000 -> 0.812")


def test_a_run_evaluated_on_one_turn_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="ran no episodes"):
        read_run(_run(tmp_path, max_turns_row=False))
