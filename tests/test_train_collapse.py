"""The collapse watch: its signals on hand-made metric sequences, its config, and a tiny
run whose step metrics are scripted (entropy falling, groups uniform) through the
rl_step seam: the warnings, the collapse/warning metric, and a run that
watch.stop_on_collapse ends cleanly with its reason in summary.json."""

from __future__ import annotations

import json

import pytest

import rlvr.training.run as run_module
from rlvr.cli.main import main
from rlvr.config import ConfigError, load_config
from rlvr.training.collapse import CollapseWatch
from rlvr.training.config import TrainConfig, WatchConfig
from rlvr.training.run import train
from train_helpers import TINY_OVERRIDES, tiny_config


def _steps(watch, entropies, trained=None):
    """Feed steps 1.. with these entropies; the steps at which a warning started."""
    started = []
    for step, entropy in enumerate(entropies, start=1):
        line = {"step": step, "entropy": entropy}
        if trained is not None:
            line["rows_trained"] = trained[step - 1]
        started += [(w["step"], w["signal"]) for w in watch.observe_step(line)]
    return started


def test_entropy_signal_against_its_early_value():
    watch = CollapseWatch(WatchConfig(window=2, early_steps=2, entropy_ratio=0.25,
                                      uniform_share=0, accuracy_drop=0))
    # early mean (1.0 + 0.6) / 2 = 0.8 -> threshold 0.2. Windows of 2: step 3 (0.6, 0.3)
    # 0.45; 4 (0.3, 0.12) 0.21; 5 (0.12, 0.05) 0.085 on; 6 (0.05, 0.04) stays on;
    # 7 (0.04, 0.5) 0.27 off; 8 (0.5, 0.02) 0.26 off; 9 (0.02, 0.01) 0.015 on again
    started = _steps(watch, [1.0, 0.6, 0.3, 0.12, 0.05, 0.04, 0.5, 0.02, 0.01])
    assert started == [(5, "entropy"), (9, "entropy")]
    first = watch.warnings[0]
    assert first["entropy"] == pytest.approx(0.085) and first["early"] == pytest.approx(0.8)
    assert first["threshold"] == pytest.approx(0.2) and first["window"] == [4, 5]
    assert "entropy 0.085 (mean of steps 4-5) is below 0.200; it was 0.800" in first["message"]


def test_untrained_steps_and_the_absolute_floor():
    # rows_trained 0: the step's entropy is a placeholder 0 and is left out, so the
    # window of 2 at step 3 is steps 1 and 3 (0.9, 0.85: 0.875), above the floor 0.5
    # (counted, step 2's 0 would make it 0.425 and warn at step 3); step 4's window
    # (0.85, 0.1) is 0.475, below it. No early value is needed for a floor.
    watch = CollapseWatch(WatchConfig(window=2, entropy_ratio=0, entropy_floor=0.5,
                                      uniform_share=0, accuracy_drop=0))
    assert _steps(watch, [0.9, 0.0, 0.85, 0.1], trained=[4, 0, 4, 4]) == [(4, "entropy")]
    assert watch.warnings[0]["entropy"] == pytest.approx(0.475)
    assert watch.warnings[0]["early"] is None and watch.warnings[0]["window"] == [3, 4]


def test_uniform_groups_and_held_out_drop_make_a_collapse():
    watch = CollapseWatch(WatchConfig(window=3, entropy_ratio=0, uniform_share=0.9,
                                      accuracy_drop=0.1, stop_signals=2))
    assert watch.observe_eval(0, 0.39) == []
    signals = []
    for step, share in enumerate([1.0, 0.8, 1.0, 0.95], start=1):
        signals += [w["signal"] for w in watch.observe_step({"step": step,
                                                             "groups_uniform": share})]
        if step == 2:  # drop 0.39 - 0.30 = 0.09 < 0.1: not yet
            assert watch.observe_eval(2, 0.30) == []
    # step 3: (1.0 + 0.8 + 1.0) / 3 = 0.933 >= 0.9; step 4: 0.917, still on (no repeat)
    assert signals == ["uniform_groups"] and not watch.collapsed()
    [drop] = watch.observe_eval(4, 0.15)
    assert drop["drop"] == pytest.approx(0.24) and drop["best"] == 0.39
    assert drop["best_step"] == 0
    assert drop["message"] == ("collapse watch, step 4: held-out accuracy 0.150 is 0.240 "
                               "below its best 0.390 (step 0)")
    assert watch.collapsed()
    reason = watch.stop_reason(4)
    assert reason["reason"] == "collapse" and reason["step"] == 4
    assert set(reason["signals"]) == {"uniform_groups", "held_out_drop"}
    assert reason["signals"]["uniform_groups"]["share"] == pytest.approx(2.75 / 3)
    watch.observe_eval(5, 0.39)  # recovered to the best: the drop turns off; tie keeps 0
    assert watch.best == (0, 0.39) and not watch.collapsed()


@pytest.mark.parametrize("override, field", [
    ("watch.window=0", "watch.window"), ("watch.stop_signals=4", "watch.stop_signals"),
    ("watch.entropy_ratio=1.5", "watch.entropy_ratio"),
    ("watch.entropy_floor=-1", "watch.entropy_floor"),
    ("watch.uniform_share=2", "watch.uniform_share")])
def test_bad_watch_fields_are_named(override, field):
    with pytest.raises(ConfigError, match=field):
        load_config(TrainConfig, overrides=[override])


ENTROPY = {1: 2.0, 2: 2.0}  # then 0.1: a fall to 5% of the early value


@pytest.fixture
def collapsing(monkeypatch):
    """Real RL steps whose logged entropy and uniform-group share are scripted (what a
    collapsing run reports), through the rl_step seam the run calls."""
    real = run_module.rl_step

    def step(trainer, number):
        metrics, rollouts = real(trainer, number)
        metrics.update(entropy=ENTROPY.get(number, 0.1), groups_uniform=1.0, rows_trained=4.0)
        return metrics, rollouts

    monkeypatch.setattr(run_module, "rl_step", step)


WATCH = ["watch.window=2", "watch.early_steps=2", "checkpoint_every=0"]


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_collapsing_run_warns_with_its_numbers(tmp_path, collapsing):
    from rlvr.runs import Progress

    said = []

    class Recorder(Progress):
        def message(self, text):
            said.append(text)

    summary = train(tiny_config("steps=4", *WATCH), tmp_path / "r",
                    progress=Recorder(4, quiet=True))
    assert summary["steps"] == 4 and summary["stopped"] is None
    warnings = summary["collapse_warnings"]
    # uniform: 2-step windows of 1.0 from step 2; entropy: (0.1 + 0.1) / 2 at step 4
    # below 0.25 x 2.0 (the early mean of steps 1-2)
    assert [(w["step"], w["signal"]) for w in warnings] == [(2, "uniform_groups"),
                                                           (4, "entropy")]
    assert warnings[1]["entropy"] == pytest.approx(0.1) and warnings[1]["early"] == 2.0
    assert [w["message"] for w in warnings] == [m for m in said if m.startswith("collapse")]
    metrics = _lines(tmp_path / "r" / "metrics.jsonl")
    assert [m["collapse/warning"] for m in metrics] == [0.0, 1.0, 1.0, 2.0]
    on_disk = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert on_disk["collapse_warnings"] == warnings


def test_stop_on_collapse_ends_the_run_cleanly(tmp_path, collapsing, capsys):
    code = main(["train", "--quiet", "--run-dir", str(tmp_path / "r"), *TINY_OVERRIDES,
                 "steps=10", *WATCH, "watch.stop_on_collapse=true", "eval.every=2"])
    assert code == 0
    run = tmp_path / "r"
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 4 and summary["planned_steps"] == 10
    stopped = summary["stopped"]
    assert stopped["reason"] == "collapse" and stopped["step"] == 4
    assert set(stopped["signals"]) == {"entropy", "uniform_groups"}
    assert stopped["signals"]["entropy"]["threshold"] == pytest.approx(0.5)
    assert [m["step"] for m in _lines(run / "metrics.jsonl")] == [1, 2, 3, 4]
    # the final evaluation and checkpoint of a run that ends at step 4 (its step-4
    # evaluation is the final one: not run twice)
    assert [e["step"] for e in _lines(run / "evals.jsonl")] == [0, 2, 4]
    assert summary["eval"]["after"]["accuracy"] == _lines(run / "evals.jsonl")[2][
        "greedy/accuracy"]
    assert (run / "checkpoints" / "step-000004" / "state.json").is_file()
    assert "collapse watch: stopped at step 4: entropy and uniform_groups" in \
        capsys.readouterr().out


def test_the_kl_cov_remedy_trains_end_to_end(tmp_path, monkeypatch):
    import os
    from pathlib import Path

    from train_helpers import plugin_reward

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent),
                                                      os.environ.get("PYTHONPATH", "")]))
    cfg = tiny_config("steps=2", "sft.steps=0", "checkpoint_every=0", "algorithm.epochs=2",
                      "algorithm.policy_loss={name: kl_cov, ratio: 0.1, beta: 1.0}",
                      *plugin_reward("train_helpers:LengthVerifier"))
    train(cfg, tmp_path / "r")
    for line in _lines(tmp_path / "r" / "metrics.jsonl"):
        # every row trains (a zero-advantage row's tokens may be penalised), and about
        # a tenth of the valid tokens carry the penalty (at least one per batch)
        assert line["rows_trained"] == 4 * 2
        assert 0 < line["kl_cov_frac"] <= 0.5 and line["ratio_min"] > 0
        assert "clip_frac" not in line
