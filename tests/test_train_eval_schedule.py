"""Held-out evaluations during RL: the flat row (greedy + pass@k/maj@k on a subset), when
they are due (steps, training-clock marks), the training clock that pauses them out,
evals.jsonl, and a run stopped by its max_seconds budget."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from rlvr.config import ConfigError, load_config
from rlvr.data.prompts import PromptRenderer
from rlvr.data.records import TaskRecord
from rlvr.evaluation.held_out import EvalPlan, held_out_eval
from rlvr.training import clock as clock_module
from rlvr.training.clock import TrainingClock
from rlvr.training.config import TrainConfig
from rlvr.training.evaluate import EvalSchedule
from rlvr.training.run import ResumeError, train
from rlvr.verifiers.pool import VerifierPool

from eval_helpers import ScriptedEngine
from train_helpers import tiny_config

RECORDS = [TaskRecord("1+1", "2", "exact", "p1"), TaskRecord("2+2", "4", "exact", "p2"),
           TaskRecord("3+3", "6", "exact", "p3")]
RENDER = PromptRenderer(SimpleNamespace(bos_token=""), "plain", "{prompt}").render


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(workers=1) as p:
        yield p


def test_row_has_greedy_over_all_and_samples_over_the_first_records(pool):
    engine = ScriptedEngine(
        greedy={"1+1": "Answer: 2", "2+2": "Answer: 5", "3+3": "Answer: 6"},
        samples={"1+1": ["Answer: 2", "Answer: 3", "Answer: 3"],
                 "2+2": ["Answer: 4", "Answer: 4", "Answer: 1"], "3+3": ["never asked"] * 3})
    plan = EvalPlan(max_new_tokens=8, n=3, ks=(1, 2, 3), sample_size=2)
    row = held_out_eval(engine, RENDER, pool, RECORDS, plan)
    # By hand: greedy 2 of 3 right; samples only for p1, p2 (sample_size=2).
    assert row["greedy/accuracy"] == pytest.approx(2 / 3) and row["count"] == 3
    assert row["sample/count"] == 2
    # p1: 1 of 3 right, p2: 2 of 3 right. pass@1 = mean(1/3, 2/3) = 1/2;
    # pass@2 = mean(1 - C(2,2)/C(3,2), 1 - C(1,2)/C(3,2)) = mean(2/3, 1) = 5/6; pass@3 = 1.
    assert row["pass@1"] == pytest.approx(0.5) and row["sample/accuracy"] == pytest.approx(0.5)
    assert row["pass@2"] == pytest.approx(5 / 6) and row["pass@3"] == pytest.approx(1.0)
    # maj@3: p1 votes {2: 1, 3: 2} -> 3 wrong; p2 votes {4: 2, 1: 1} -> 4 right.
    assert row["maj@3"] == pytest.approx(0.5)
    assert row["greedy/length"] == 2.0  # ScriptedEngine's completions are 2 tokens
    assert row["eval_seconds"] >= 0
    sampled_prompts = [call[0] for call in engine.calls if call[2].temperature > 0]
    assert sampled_prompts == [["1+1", "2+2"]]


def test_greedy_only_plan_has_no_sample_keys(pool):
    engine = ScriptedEngine(greedy={"1+1": "2", "2+2": "4", "3+3": "7"})
    row = held_out_eval(engine, RENDER, pool, RECORDS, EvalPlan(max_new_tokens=8))
    assert row["greedy/accuracy"] == pytest.approx(2 / 3)
    assert not [k for k in row if k.startswith(("pass@", "maj@", "sample/"))]


def test_schedule_by_steps_and_by_clock_marks():
    by_steps = EvalSchedule(every=3, every_s=0)
    assert [s for s in range(1, 10) if by_steps.due(s, 0.0)] == [3, 6, 9]
    by_time = EvalSchedule(every=0, every_s=10.0)
    clock = {1: 4.0, 2: 9.9, 3: 10.1, 4: 19.0, 5: 35.0, 6: 36.0, 7: 40.0}
    # marks 10, 20+30 (one evaluation for two marks passed in one step), 40
    assert [s for s in clock if by_time.due(s, clock[s])] == [3, 5, 7]


def test_schedule_after_a_resume_skips_marks_already_passed():
    schedule = EvalSchedule(every=0, every_s=10.0, clock_seconds=25.0)
    assert not schedule.due(4, 29.0) and schedule.due(5, 30.5)


def test_clock_pauses_out_the_block(monkeypatch):
    now = {"t": 100.0}
    monkeypatch.setattr(clock_module.time, "perf_counter", lambda: now["t"])
    clock = TrainingClock(carried=5.0)
    with clock.paused():  # not started yet: stays stopped
        now["t"] += 50
    assert clock.seconds() == 5.0
    clock.start()
    now["t"] += 3
    with clock.paused():
        now["t"] += 40
    now["t"] += 2
    assert clock.seconds() == pytest.approx(10.0)


def test_old_eval_every_is_read_as_eval_every_section():
    cfg = load_config(TrainConfig, overrides=["eval_every=4"])
    assert cfg.eval.every == 4


def test_bad_eval_fields_are_named():
    with pytest.raises(ConfigError, match="eval.ks"):
        load_config(TrainConfig, overrides=["eval.ks=[0]"])
    with pytest.raises(ConfigError, match="max_seconds"):
        load_config(TrainConfig, overrides=["max_seconds=-1"])


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_run_logs_evals_with_samples_and_stops_at_max_seconds(tmp_path):
    cfg = tiny_config("steps=50", "max_seconds=1e-9", "eval.n=2", "eval.ks=[1,2]",
                      "eval.sample_size=3", "data.eval_size=4", "checkpoint_every=0")
    summary = train(cfg, tmp_path / "run")
    # The budget is spent by the first step: the run stops there and evaluates.
    assert summary["steps"] == 1 and summary["planned_steps"] == 50
    evals = _lines(tmp_path / "run" / "evals.jsonl")
    assert [e["step"] for e in evals] == [0, 1]
    assert evals[0]["train_seconds"] == 0.0 and evals[1]["train_seconds"] > 0
    for row in evals:
        assert row["count"] == 4 and row["sample/count"] == 3
        assert row["pass@1"] == pytest.approx(row["sample/accuracy"])
        assert row["wall_seconds"] >= row["train_seconds"]
    assert summary["eval"]["after"]["accuracy"] == evals[1]["greedy/accuracy"]
    assert "answers" not in summary["eval"]["after"]  # they go to evals/, not the summary
    answers = _lines(tmp_path / "run" / "evals" / "step-000001.jsonl")
    assert len(answers) == 4
    assert sum(a["passed"] for a in answers) / 4 == evals[1]["greedy/accuracy"]
    assert all(a["prompt"] and a["reference"] for a in answers)
    metrics = _lines(tmp_path / "run" / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [1]
    assert (tmp_path / "run" / "checkpoints" / "step-000001").is_dir()
    with pytest.raises(ResumeError, match="max_seconds"):
        train(cfg, tmp_path / "run", resume=True)


def test_run_announces_each_evaluation_between_steps(tmp_path):
    from rlvr.runs import Progress

    messages = []

    class Recorder(Progress):
        def message(self, text):
            messages.append(text)

    cfg = tiny_config("steps=2", "eval.every=1", "eval.n=2", "eval.ks=[2]",
                      "data.eval_size=3", "checkpoint_every=0")
    train(cfg, tmp_path / "run", progress=Recorder(2, quiet=True))
    evals = _lines(tmp_path / "run" / "evals.jsonl")
    assert [e["step"] for e in evals] == [0, 1, 2]  # step 2 is the final ("after") one
    said = [m for m in messages if m.startswith("held-out accuracy at step")]
    assert len(said) == 1 and said[0].startswith("held-out accuracy at step 1 (")
    row = evals[1]
    assert said[0].endswith(f"{row['greedy/accuracy']:.3f}, pass@2 {row['pass@2']:.3f}, "
                            f"maj@2 {row['maj@2']:.3f}")


@pytest.mark.parametrize("plan", [EvalPlan(max_new_tokens=8, n=2, temperature=0.0),
                                  EvalPlan(max_new_tokens=8, n=2, ks=(0,)),
                                  EvalPlan(max_new_tokens=8, n=-1),
                                  EvalPlan(max_new_tokens=8, sample_size=-1)])
def test_a_bad_plan_fails_before_the_greedy_pass(pool, plan):
    engine = ScriptedEngine(greedy={"1+1": "2", "2+2": "4", "3+3": "6"})
    with pytest.raises(ValueError):
        held_out_eval(engine, RENDER, pool, RECORDS, plan)
    assert engine.calls == []  # nothing was generated


def test_bad_eval_verifier_is_named_before_anything_runs():
    with pytest.raises(ConfigError, match="eval.verifier.*unknown verifier 'no_such'"):
        load_config(TrainConfig, overrides=["eval.verifier=no_such"])
    with pytest.raises(ConfigError, match="eval.options.*needs eval.verifier"):
        load_config(TrainConfig, overrides=["eval.options={x: 1}"])


def test_eval_verifier_grades_held_out_answers_and_the_reward_grades_training(tmp_path):
    cfg = tiny_config("steps=1", "data.eval_size=4", "checkpoint_every=0",
                      "reward.plugins=[train_helpers:EveryAnswerPasses]",
                      "eval.verifier=train_helpers:EveryAnswerPasses")
    summary = train(cfg, tmp_path / "run")
    evals = _lines(tmp_path / "run" / "evals.jsonl")
    assert [e["greedy/accuracy"] for e in evals] == [1.0, 1.0]
    for step in (0, 1):
        answers = _lines(tmp_path / "run" / "evals" / f"step-{step:06d}.jsonl")
        assert [a["reason"] for a in answers] == ["graded_by_eval_verifier"] * 4
    # training attempts were graded by the run's reward (exact), not by the eval grader
    attempts = _lines(tmp_path / "run" / "rollouts.jsonl")
    assert attempts and all(a["verdict"]["reason"] != "graded_by_eval_verifier"
                            for a in attempts)
    assert summary["eval"]["after"]["accuracy"] == 1.0
