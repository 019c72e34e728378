"""logging.backends: config errors before anything is built, and what the training loop
hands every tracker (checked with a recording tracker, so these run without any tracker
package; tests/test_trackers_backends.py reads the real backends back)."""

from __future__ import annotations

import io
import math
import sys

import pytest

from rlvr.config import ConfigError, load_config
from rlvr.runs import Progress, RunDir
from rlvr.runs.trackers import RunInfo, Tracker, TrackerSet, attempt_rows
from rlvr.training.config import TrainConfig
from rlvr.training.resume import check_resumable
from train_helpers import tiny_config


class Recorder(Tracker):
    """Keeps every call; `fail_at` makes log_metrics raise at that step."""

    def __init__(self, name: str = "recorder", fail_at: int | None = None,
                 fail_start: bool = False) -> None:
        self.name, self.fail_at, self.fail_start = name, fail_at, fail_start
        self.metrics, self.evals, self.attempts = {}, {}, {}
        self.info, self.status, self.metric_calls = None, None, 0

    def start(self, info):
        if self.fail_start:
            raise OSError("no route to the tracking server")
        self.info = info

    def log_metrics(self, step, metrics):
        self.metric_calls += 1
        if step == self.fail_at:
            raise ConnectionError("server went away")
        self.metrics[step] = metrics

    def log_evals(self, step, row):
        self.evals[step] = row

    def log_attempts(self, step, rows):
        self.attempts[step] = rows

    def finish(self, status):
        self.status = status


def _use(monkeypatch, *trackers: Recorder) -> None:
    """train() builds these instead of the named backends (no package needed)."""
    queue = list(trackers)
    # both checks: the config's (package installed?) and train()'s (package imports?)
    monkeypatch.setattr("rlvr.runs.trackers.tracker_problem", lambda *a, **k: None)
    monkeypatch.setattr("rlvr.training.tracking.tracker_problem", lambda *a, **k: None)
    monkeypatch.setattr("rlvr.training.tracking.build_tracker", lambda name: queue.pop(0))


# --- config ---------------------------------------------------------------------------

def test_default_is_jsonl_alone():
    assert load_config(TrainConfig).logging.backends == ("jsonl",)


def test_unknown_backend_names_the_field_and_the_choices():
    with pytest.raises(ConfigError, match=r"^logging\.backends: unknown tracker 'tensorbord' "
                       r"\(choices: jsonl, tensorboard, wandb, mlflow, trackio\)"):
        load_config(TrainConfig, overrides=["logging.backends=[jsonl, tensorbord]"])


@pytest.mark.parametrize("override,field", [("logging.attempts_per_step=-1",
                                             "logging.attempts_per_step"),
                                            ("logging.attempts_every=0",
                                             "logging.attempts_every"),
                                            ("logging.wandb_mode=cloud", "logging.wandb_mode")])
def test_bad_logging_values_name_the_field(override, field):
    with pytest.raises(ConfigError, match=rf"^{field}:"):
        load_config(TrainConfig, overrides=[override])


def test_missing_package_names_it_and_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "wandb", None)  # `import wandb` now fails, as if absent
    with pytest.raises(ConfigError, match=r"^logging\.backends: wandb needs the wandb "
                       r"package: pip install 'rlvr\[wandb\]'"):
        load_config(TrainConfig, overrides=["logging.backends=[wandb]"])


def test_train_refuses_a_missing_package_before_building(monkeypatch, tmp_path):
    from rlvr.training.run import train

    cfg = tiny_config("steps=1")
    cfg.logging.backends = ("jsonl", "mlflow")  # after loading: only train()'s check runs
    monkeypatch.setitem(sys.modules, "mlflow", None)
    monkeypatch.setattr("rlvr.training.run.load_data",
                        lambda *a: pytest.fail("data was loaded before the check"))
    with pytest.raises(ConfigError, match=r"^logging\.backends: mlflow needs the mlflow "
                       r"package: pip install 'rlvr\[mlflow\]'"):
        train(cfg, tmp_path / "run")
    assert not (tmp_path / "run").exists()


def test_a_tracker_that_cannot_start_fails_before_the_model(monkeypatch, tmp_path):
    from rlvr.training.run import train

    first, broken = Recorder("first"), Recorder("broken", fail_start=True)
    _use(monkeypatch, first, broken)
    monkeypatch.setattr("rlvr.training.run.load_policy",
                        lambda *a: pytest.fail("a model was built before the trackers"))
    cfg = tiny_config("steps=1", "logging.backends=[tensorboard, wandb]")
    with pytest.raises(ConfigError, match=r"^logging\.backends: tracker broken could not "
                       r"start: OSError: no route"):
        train(cfg, tmp_path / "run")
    assert first.status == "failed"  # the one that had started is closed


def test_logging_may_change_on_resume():
    saved = load_config(TrainConfig)
    changed = load_config(TrainConfig, overrides=["logging.backends=[jsonl, tensorboard]",
                                                  "logging.attempts_per_step=0",
                                                  "logging.project=other"])
    check_resumable(saved, changed)  # no error


# --- what the loop hands the trackers ---------------------------------------------------

def test_training_feeds_metrics_evals_and_attempts(monkeypatch, tmp_path):
    from rlvr.training.run import train

    recorder, flaky = Recorder(), Recorder("flaky", fail_at=2)
    _use(monkeypatch, recorder, flaky)
    cfg = tiny_config("sft.steps=0", "steps=3", "eval.every=2", "logging.attempts_per_step=3",
                      "logging.attempts_every=2", "logging.backends=[jsonl, wandb, mlflow]")
    log = io.StringIO()
    train(cfg, tmp_path / "run", progress=Progress(3, stream=log))
    run = RunDir(tmp_path / "run")
    assert recorder.info.name == "run" and recorder.info.first_step == 1
    assert recorder.info.config["steps"] == 3 and recorder.status == "finished"

    # Every finite number of metrics.jsonl, at its step; strings and NaN left out.
    lines = run.read_metrics()
    assert sorted(recorder.metrics) == [line["step"] for line in lines] == [1, 2, 3]
    for line in lines:
        expected = {k: float(v) for k, v in line.items() if k != "step" and
                    isinstance(v, (int, float)) and math.isfinite(v)}
        assert recorder.metrics[line["step"]] == expected
        assert "update/path" not in recorder.metrics[line["step"]]

    # Every held-out evaluation (step 0 = before RL), its names under evals/.
    evals = run.read_evals()
    assert sorted(recorder.evals) == [row["step"] for row in evals] == [0, 2, 3]
    for row in evals:
        assert recorder.evals[row["step"]]["evals/greedy/accuracy"] == row["greedy/accuracy"]

    # Attempts every 2nd step: 3 of the step's 8, the lines of rollouts.jsonl.
    assert sorted(recorder.attempts) == [2]
    rollouts = [r for r in _read_jsonl(run.rollouts) if r["step"] == 2]
    assert recorder.attempts[2] == attempt_rows(rollouts, 3)
    assert [row["completion"] for row in recorder.attempts[2]] == [
        rollouts[i]["completion"] for i in (0, 2, 5)]

    # The tracker that failed at step 2 was warned about once and dropped; training went on.
    assert flaky.metric_calls == 2 and sorted(flaky.metrics) == [1]
    assert flaky.status == "failed"
    assert log.getvalue().count("tracker flaky failed (ConnectionError") == 1
    assert (tmp_path / "run" / "summary.json").is_file()


def test_resumed_run_tells_trackers_where_it_continues(monkeypatch, tmp_path):
    from rlvr.training.run import train
    from train_helpers import interrupt_at

    cfg = tiny_config("sft.steps=0", "steps=3", "checkpoint_every=1",
                      "logging.backends=[jsonl, tensorboard]")
    first = Recorder()
    _use(monkeypatch, first)
    monkeypatch.setattr("rlvr.training.run.rl_step", interrupt_at(3))
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "run")
    assert first.status == "killed" and sorted(first.metrics) == [1, 2]
    monkeypatch.undo()
    second = Recorder()
    _use(monkeypatch, second)
    train(cfg, tmp_path / "run", resume=True)
    assert second.info.first_step == 3 and sorted(second.metrics) == [3]
    assert second.status == "finished"


# --- the fan-out alone --------------------------------------------------------------------

def test_attempt_rows_spread_over_the_step():
    lines = [{"prompt_id": f"p{i // 2}", "prompt": "1+1=", "completion": str(i),
              "verdict": {"reason": "ok", "score": 1.0}, "reward": 1.0, "advantage": 0.5,
              "length": 3} for i in range(8)]
    assert [r["completion"] for r in attempt_rows(lines, 4)] == ["0", "2", "4", "6"]
    assert [r["completion"] for r in attempt_rows(lines, 20)] == [str(i) for i in range(8)]
    assert attempt_rows(lines, 0) == [] and attempt_rows([], 3) == []


def test_finish_failure_warns_and_does_not_raise(tmp_path):
    class Unclosable(Recorder):
        def finish(self, status):
            raise OSError("disk full")

    warnings = []
    trackers = TrackerSet([Unclosable("u")], warn=warnings.append)
    trackers.start(RunInfo("r", tmp_path, {}, "rlvr"))
    trackers.finish("finished")
    assert len(warnings) == 1 and "tracker u did not close cleanly" in warnings[0]


def _read_jsonl(path):
    import json

    return [json.loads(line) for line in path.read_text().splitlines()]
