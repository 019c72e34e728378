"""benchmarks/headline/bench_collapse.py without training: the curves it reads from a
run's logs, the verdict and the lines it prints, on hand-written runs."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.headline.bench_collapse import REMEDIES, curve, remedy_line, table, verdict
from rlvr.config import load_config
from rlvr.training.config import TrainConfig

REPO = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, name: str, evals: list[tuple[int, float]],
         entropy: dict[int, float]) -> Path:
    run = tmp_path / name
    run.mkdir()
    (run / "evals.jsonl").write_text("".join(
        json.dumps({"step": s, "greedy/accuracy": a}) + "\n" for s, a in evals))
    (run / "metrics.jsonl").write_text("".join(
        json.dumps({"step": s, "entropy": e}) + "\n" for s, e in entropy.items()))
    return run


def test_curve_joins_evaluations_with_the_steps_entropy(tmp_path: Path) -> None:
    run = _run(tmp_path, "base", [(0, 0.2), (5, 0.35), (10, 0.3)],
               {1: 1.9, 5: 1.2, 9: 0.4, 10: 0.15})
    assert curve(run) == [{"step": 0, "accuracy": 0.2, "entropy": None},
                          {"step": 5, "accuracy": 0.35, "entropy": 1.2},
                          {"step": 10, "accuracy": 0.3, "entropy": 0.15}]


def test_verdict_takes_the_earliest_best_and_counts_warnings() -> None:
    rows = [{"step": 0, "accuracy": 0.2}, {"step": 5, "accuracy": 0.39},
            {"step": 10, "accuracy": 0.39}, {"step": 15, "accuracy": 0.15}]
    got = verdict(rows, {"collapse_warnings": [{"step": 12}]})
    assert got == {"best": 0.39, "best_step": 5, "final": 0.15, "warnings": 1}
    assert verdict(rows[:1], {})["warnings"] == 0


def test_lines() -> None:
    base = {"best": 0.39, "best_step": 20, "final": 0.15, "warnings": 2}
    fixed = {"best": 0.42, "best_step": 35, "final": 0.41, "warnings": 0}
    assert remedy_line(base, fixed, "kl_ref_0.1").endswith("; kl_ref_0.1 best 0.420 at step "
                                                           "35, final 0.410, warnings 0")
    assert remedy_line(base, fixed) == (
        "collapse remedy: base best 0.390 at step 20, final 0.150, warnings 2; "
        "kl_cov best 0.420 at step 35, final 0.410, warnings 0")
    lines = table({"base": [{"step": 0, "accuracy": 0.2, "entropy": None},
                            {"step": 5, "accuracy": 0.3, "entropy": 1.25}],
                   "kl_cov": [{"step": 0, "accuracy": 0.2, "entropy": None}]})
    assert lines[1].split() == ["0", "0.200", "/", "-", "0.200", "/", "-"]
    assert lines[2].split() == ["5", "0.300", "/", "1.250", "-"]


def test_each_remedy_is_a_valid_override_of_the_benchs_config() -> None:
    def load(name: str) -> TrainConfig:
        return load_config(TrainConfig, str(REPO / "configs" / "learning_arithmetic.yaml"),
                           list(REMEDIES[name]))
    assert load("kl_cov").algorithm.policy_loss.plain() == {"name": "kl_cov", "ratio": 0.002,
                                                            "beta": 1.0}
    assert load("kl_cov_0.02").algorithm.policy_loss.plain()["ratio"] == 0.02
    ref = load("kl_ref_0.1").algorithm
    assert ref.kl_beta == 0.1 and ref.policy_loss.plain()["name"] == "ppo_clip"
