"""benchmarks.headline.bench_tools reads its three runs' summary.json files (the untrained
model in the tool environment, the tool recipe, the same run without tools) into its
headline line; the numbers here are written into run directories by hand."""

from __future__ import annotations

import json

import pytest

from benchmarks.headline.bench_tools import combine, headline, read_summary, task_name


def _run(path, before, after, calls=None, sft_seconds=None, train_seconds=300.0, steps=20):
    def row(acc, n_calls):
        extra = {"greedy/tool_calls": n_calls} if calls is not None else {}
        return {"greedy/accuracy": acc, "count": 32.0, **extra}
    summary = {"eval": {"before": {"row": row(before, calls and calls[0])},
                        "after": {"row": row(after, calls and calls[1])}},
               "train_seconds": train_seconds, "steps": steps, "wall_seconds": 500.0,
               "sft": {"steps": 6, "seconds": sft_seconds} if sft_seconds else {"steps": 0}}
    path.mkdir()
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "config.yaml").write_text("data:\n  path: products-train\n")
    return path


def test_headline_from_three_run_directories(tmp_path):
    base = read_summary(_run(tmp_path / "base", 0.0625, 0.0625, calls=(0.0, 0.0),
                             train_seconds=20.0, steps=1))
    tools = read_summary(_run(tmp_path / "tools", 0.5, 0.96875, calls=(1.0, 0.96875),
                              sft_seconds=95.5, train_seconds=300.2))
    no_tools = read_summary(_run(tmp_path / "none", 0.09375, 0.125, sft_seconds=60.0))
    r = combine(base, tools, no_tools)
    assert (r["A"], r["B"], r["T0"], r["T1"]) == (0.0625, 0.96875, 0.0, 0.96875)
    assert r["S"] == pytest.approx(95.5 + 300.2)  # the cold start counts
    assert (r["A2"], r["C"], r["after_cold_start"]) == (0.09375, 0.125, 0.5)
    assert headline(task_name(tmp_path / "tools"), r) == (
        "tools: products held-out 0.062 -> 0.969, tool calls per episode 0.00 -> 0.97, "
        "in 396 s; without tools 0.094 -> 0.125")


def test_tool_runs_evaluated_on_one_turn_are_refused(tmp_path):
    one_turn = read_summary(_run(tmp_path / "a", 0.1, 0.2))
    with pytest.raises(SystemExit, match="ran no episodes"):
        combine(one_turn, one_turn, one_turn)
