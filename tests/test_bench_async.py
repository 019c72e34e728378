"""benchmarks/systems/bench_async.py's pure parts on hand-written rows: the last line's
exact format, the speed ratio, s/step without the start-up step, the held-out
evaluation standing for T seconds, the staleness summary and the workloads' overrides;
and the remote-verifier stand-in grades as math does, after its wait."""

from __future__ import annotations

import pytest

from benchmarks.systems import bench_async as bench
from benchmarks.systems.remote_verifier import RemoteVerifierStandIn
from rlvr.verifiers.registry import get_verifier

EVALS = [{"step": 0, "train_seconds": 0.0, "greedy/accuracy": 0.05},
         {"step": 31, "train_seconds": 603.5, "greedy/accuracy": 0.4},
         {"step": 40, "train_seconds": 780.0, "greedy/accuracy": 0.5}]


def test_the_last_line_has_the_exact_format():
    line = bench.result_line("remote-verifier", 1, 2.5, 4.0, 600, 0.4, 0.315, 0.875, 1)
    assert line == ("async: remote-verifier K=1 s/step 2.50 vs sync 4.00 (x1.60), "
                    "held-out at 600 s: async 0.400 vs sync 0.315, staleness mean 0.88 max 1")


def test_the_speed_ratio_is_sync_over_async_seconds_per_step():
    assert bench.speed_ratio(2.0, 3.0) == 1.5
    assert bench.speed_ratio(4.0, 3.0) == 0.75  # async slower: below 1
    assert bench.speed_ratio(0.0, 3.0) == float("inf")


def test_seconds_per_step_leaves_out_the_start_up_step():
    rows = [{"time/step": 9.0}, {"time/step": 2.0}, {"time/step": 4.0}]
    assert bench.seconds_per_step(rows) == 3.0
    assert bench.seconds_per_step(rows[:1]) == 9.0  # one step: that one


def test_the_evaluation_at_t_is_the_first_at_or_after_it():
    assert bench.held_out_at(EVALS, 600)["step"] == 31
    assert bench.held_out_at(EVALS, 603.5)["step"] == 31
    assert bench.held_out_at(EVALS, 700)["step"] == 40
    assert bench.held_out_at(EVALS, 900)["step"] == 40  # the run ended earlier: its last
    with pytest.raises(ValueError, match="no held-out evaluation"):
        bench.held_out_at([], 600)


def test_staleness_summary_over_the_steps():
    rows = [{"staleness/mean": 0.0, "staleness/max": 0.0},
            {"staleness/mean": 0.5, "staleness/max": 1.0},
            {"staleness/mean": 1.0, "staleness/max": 1.0},
            {"staleness/mean": 0.5, "staleness/max": 2.0}]
    assert bench.staleness(rows) == (0.5, 2)


def test_workload_overrides():
    assert bench.workload_overrides("arithmetic", bench.STAND_IN, 0.25) == []
    stand_in = bench.workload_overrides("remote-verifier", bench.STAND_IN, 0.25)
    assert stand_in == [f"reward.plugins=[{bench.STAND_IN}]",
                        f"reward.verifier={bench.STAND_IN}", "eval.verifier=math",
                        "reward.options={latency_s: 0.25}"]
    own = bench.workload_overrides("remote-verifier", "mine:Grader", 0.25)
    assert own == ["reward.plugins=[mine:Grader]", "reward.verifier=mine:Grader",
                   "eval.verifier=math"]  # its options are the operator's to give
    with pytest.raises(ValueError, match="unknown workload"):
        bench.workload_overrides("chess", bench.STAND_IN, 0.25)


def test_the_stand_in_gives_maths_verdict():
    stand_in, math = RemoteVerifierStandIn(latency_s=0), get_verifier("math")
    for answer in ("The answer is \\boxed{12}.", "\\boxed{13}", "no idea"):
        assert stand_in.verify(answer, "12", prompt="What is 7 + 5?") == math.verify(
            answer, "12", prompt="What is 7 + 5?")
    assert stand_in.verify("\\boxed{12}", "12", prompt="What is 7 + 5?").passed
    with pytest.raises(ValueError, match="latency_s"):
        RemoteVerifierStandIn(latency_s=-1)


def test_each_workload_loads_as_the_runs_config():
    """What the two `rlvr train` runs are given parses, the plugin installs and its
    options reach the reward (no run: the lead runs the benchmark)."""
    from rlvr.config import load_config
    from rlvr.training.config import TrainConfig

    for workload in bench.WORKLOADS:
        args = bench.parse_args(["--workload", workload, "--seconds", "120"])
        common = bench.common_overrides(args)
        cfg = load_config(TrainConfig, bench.CONFIG, overrides=common)
        assert cfg.max_seconds == 120 and cfg.eval.n == 0 and cfg.eval.every_s == 0
        assert cfg.data.eval_size == 200  # the config's held-out set, on both sides
    assert (cfg.reward.verifier, cfg.reward.options, cfg.eval.verifier) == (
        bench.STAND_IN, {"latency_s": 0.25}, "math")


def test_pairs_combine_as_medians_of_speed_and_means_of_accuracy():
    runs = [{"s_per_step": 13.0, "held_out": 0.50, "staleness_mean": 0.9, "staleness_max": 1},
            {"s_per_step": 19.0, "held_out": 0.47, "staleness_mean": 1.0, "staleness_max": 1},
            {"s_per_step": 14.0, "held_out": 0.44, "staleness_mean": 0.8, "staleness_max": 1}]
    combined = bench.combine_pairs(runs)
    assert combined["s_per_step"] == 14.0  # the disturbed 19 s run is left out
    assert combined["held_out"] == pytest.approx((0.50 + 0.47 + 0.44) / 3)
    assert combined["staleness_mean"] == pytest.approx(0.9)
    assert (combined["staleness_max"], combined["runs"]) == (1, 3)
    assert bench.combine_pairs(runs[:2])["s_per_step"] == 16.0  # two: their mean
    with pytest.raises(ValueError, match="no runs"):
        bench.combine_pairs([])


def test_async_only_overrides_load_on_the_async_side():
    from rlvr.config import load_config
    from rlvr.training.config import TrainConfig

    args = bench.parse_args(["--workload", "remote-verifier", "--pairs", "2", "--async-set",
                             "algorithm.old_logprobs_from_update=true"])
    assert args.pairs == 2 and args.async_set == ["algorithm.old_logprobs_from_update=true"]
    cfg = load_config(TrainConfig, bench.CONFIG, overrides=[
        *bench.common_overrides(args), "rollout.max_staleness=1", *args.async_set])
    assert cfg.algorithm.old_logprobs_from_update and cfg.rollout.max_staleness == 1
    with pytest.raises(SystemExit):
        bench.parse_args(["--pairs", "0"])
