"""benchmarks/headline/bench_learning.py without training: the time-to-accuracy numbers
and the lines it prints, from hand-made evaluation lists; and the TRL side's GRPOConfig settings
from rlvr configs."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from rlvr.config import load_config
from rlvr.training.config import TrainConfig

from benchmarks.headline.bench_learning import (at_mark, first_reaching, learning_line,
                                                long_run_line, mark_table, marks_end,
                                                side_overrides, versus_line)
from benchmarks.headline.bench_learning_trl_side import grpo_settings


def evals(*points: tuple[int, float, float]) -> list[dict]:
    """(step, train_seconds, greedy accuracy) -> evals.jsonl-like rows."""
    return [{"step": s, "train_seconds": t, "greedy/accuracy": a} for s, t, a in points]


RLVR = evals((0, 0.0, 0.2), (10, 150.5, 0.3), (20, 301.0, 0.45), (30, 451.6, 0.5))
TRL = evals((0, 0.0, 0.2), (3, 160.0, 0.25), (9, 452.0, 0.45))


def test_time_to_accuracy() -> None:
    assert first_reaching(RLVR, 0.45) == 301.0
    assert first_reaching(RLVR, 0.46) == 451.6
    assert first_reaching(RLVR, 0.6) is None
    assert at_mark(RLVR, 300.0)["step"] == 20  # the evaluation the 300 s mark triggered
    assert at_mark(RLVR, 600.0)["step"] == 30  # the run ended before 600 s: its last
    assert marks_end(TRL, 450.0) == 450.0  # stopped by the budget
    assert marks_end(TRL, 900.0) == 452.0  # its steps ran out first


def test_final_lines() -> None:
    assert learning_line("learning-arithmetic", RLVR) == \
        "learning: learning-arithmetic held-out 0.200 -> 0.500 in 452 s (30 steps)"
    assert versus_line(RLVR, TRL, 450.0) == \
        "vs trl: rlvr 0.200 -> 0.500, trl 0.200 -> 0.450 at 450 s; rlvr reached 0.450 at 301 s"
    better_trl = TRL[:-1] + evals((9, 452.0, 0.55))
    assert versus_line(RLVR, better_trl, 450.0).endswith("rlvr did not reach 0.550 in 452 s")
    other_start = evals((0, 0.0, 0.1)) + TRL[1:]  # each side prints its own step-0 accuracy
    assert ", trl 0.100 -> 0.450 at 450 s;" in versus_line(RLVR, other_start, 450.0)


def test_mark_table_rows() -> None:
    lines = mark_table({"rlvr": RLVR, "trl": TRL}, every_s=150, budget_s=300)
    assert [line.split()[0] for line in lines] == ["mark", "before", "150", "300", "end"]
    # at 150 s: rlvr's evaluation at 150.5 s (step 10), trl's at 160 s (step 3)
    assert lines[2].split() == ["150", "s", "0.300", "(", "10,", "150", "s)",
                                "0.250", "(", "3,", "160", "s)"]


def test_mark_table_stops_at_the_last_evaluation_and_merges_repeats() -> None:
    # marks every 50 s, budget 900: the runs ended at 451.6 and 452 s, so no mark past
    # 450. Marks 50-150 pick the evaluations at 150.5 and 160 s, 200-300 those at 301
    # and 452 s: one line each, labelled by its last; 350-450 pick the final ones,
    # which the "end" line shows.
    lines = mark_table({"rlvr": RLVR, "trl": TRL}, every_s=50, budget_s=900)
    assert [line.split()[0] for line in lines] == ["mark", "before", "150", "300", "end"]


def test_flags_override_the_users_overrides() -> None:
    args = argparse.Namespace(overrides=["max_seconds=60", "optim.lr=2e-5"], budget_s=120.0,
                              every_s=None, eval_size=4)
    assert side_overrides(args) == ["max_seconds=60", "optim.lr=2e-5", "max_seconds=120.0",
                                    "data.eval_size=4"]


def test_a_long_run_keeps_the_best_and_lets_the_clock_end_it() -> None:
    args = argparse.Namespace(overrides=["optim.lr=2e-5"], budget_s=None, every_s=None,
                              eval_size=None, minutes=60.0)
    assert side_overrides(args) == ["optim.lr=2e-5", "max_seconds=3600", "eval.keep_best=true",
                                    "steps=1000000", "eval.every_s=300"]
    args.every_s, args.budget_s = 120.0, 30.0  # the explicit flags still win
    assert side_overrides(args)[-2:] == ["max_seconds=30.0", "eval.every_s=120.0"]
    assert "eval.every_s=300" not in side_overrides(args)
    cfg = load_config(TrainConfig, str(Path(__file__).resolve().parents[1] / "configs" /
                                       "learning_arithmetic.yaml"), side_overrides(args))
    assert cfg.eval.keep_best and cfg.steps == 1000000 and cfg.max_seconds == 30.0


def test_long_run_line() -> None:
    summary = {"best": {"step": 20, "accuracy": 0.5, "checkpoint": "c/best"},
               "collapse_warnings": [{"step": 30}, {"step": 31}]}
    assert long_run_line("learning-arithmetic", RLVR, summary) == (
        "long run: learning-arithmetic held-out best 0.500 at step 20, final 0.500, "
        "collapse warnings 2")
    dropped = RLVR + evals((40, 600.0, 0.41))
    assert long_run_line("t", dropped, {"best": summary["best"]}).endswith(
        "best 0.500 at step 20, final 0.410, collapse warnings 0")
    with pytest.raises(ValueError, match="keep_best"):
        long_run_line("t", RLVR, {"best": None})


def test_trl_settings_follow_the_config(tmp_path: Path) -> None:
    cfg = load_config(TrainConfig, overrides=[
        "model.path=x", "sampling.prompts_per_step=8", "sampling.group_size=4",
        "sampling.max_new_tokens=64", "optim.lr=1e-5", "optim.warmup_steps=5",
        "algorithm.policy_loss={name: ppo_clip, eps_high: 0.28}", "steps=300"])
    s = grpo_settings(cfg, str(tmp_path))
    assert (s["per_device_train_batch_size"], s["num_generations"]) == (32, 4)
    assert (s["max_completion_length"], s["learning_rate"], s["warmup_steps"]) == (64, 1e-5, 5)
    assert (s["epsilon"], s["epsilon_high"], s["beta"]) == (0.2, 0.28, 0.0)
    assert (s["loss_type"], s["scale_rewards"]) == ("dapo", "group")  # token_mean, grpo
    assert s["lr_scheduler_type"] == "constant_with_warmup" and s["max_steps"] == 300
    assert (s["use_cpu"], s["bf16"], s["gradient_checkpointing"]) == (True, False, False)


def test_trl_settings_dr_grpo_and_unsupported() -> None:
    dr = load_config(TrainConfig, overrides=["algorithm.advantage=dr_grpo",
                                             "algorithm.aggregation=constant"])
    assert (grpo_settings(dr, "o")["scale_rewards"], grpo_settings(dr, "o")["loss_type"]) == \
        ("none", "dr_grpo")
    gspo = load_config(TrainConfig, overrides=["algorithm.policy_loss=gspo",
                                               "algorithm.minibatches=2"])
    with pytest.raises(ValueError, match="algorithm.policy_loss, algorithm.minibatches"):
        grpo_settings(gspo, "o")
