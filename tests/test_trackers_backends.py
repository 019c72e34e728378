"""Each tracker backend, where its package is installed, read back with its own reader
after one real tiny run of `rlvr train` (all installed backends at once): the numbers
equal metrics.jsonl / evals.jsonl, and the attempts table holds the sampled attempts.

The run is a subprocess so that trackio writes under a TRACKIO_DIR of the test's own
(trackio reads that variable once, when imported) and W&B/MLflow see no user settings."""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import SRC
from rlvr.runs import RunDir
from rlvr.runs.trackers import BACKENDS, attempt_rows
from train_helpers import TINY_OVERRIDES

INSTALLED = [name for name, b in BACKENDS.items() if importlib.util.find_spec(b.package)]
ATTEMPTS = 3
pytestmark = pytest.mark.slow  # one ~20-30 s run on 2 cores shared by every test here


def _skip_unless_installed(name: str) -> None:
    if name not in INSTALLED:
        pytest.skip(f"the {BACKENDS[name].package} package is not installed "
                    f"(pip install 'rlvr[{BACKENDS[name].extra}]')")


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> tuple[RunDir, Path]:
    if not INSTALLED:
        pytest.skip("no tracker package installed (pip install 'rlvr[trackers]')")
    root = tmp_path_factory.mktemp("trackers")
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("WANDB_", "MLFLOW_", "TRACKIO_"))}
    env.update(PYTHONPATH=SRC, TRACKIO_DIR=str(root / "trackio"), WANDB_SILENT="true")
    overrides = [o for o in TINY_OVERRIDES if not o.startswith("sft.")]
    result = subprocess.run(
        [sys.executable, "-m", "rlvr", "train", "--run-dir", str(root / "run"), *overrides,
         "sft.steps=0", "steps=3", "eval.every=2", f"logging.attempts_per_step={ATTEMPTS}",
         f"logging.backends=[jsonl, {', '.join(INSTALLED)}]"],
        env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return RunDir(root / "run"), root


def _numbers(line: dict) -> dict[str, float]:
    return {k: float(v) for k, v in line.items()
            if k != "step" and isinstance(v, (int, float)) and math.isfinite(v)}


def _expected(run: RunDir) -> dict[int, dict[str, float]]:
    """step -> every number a tracker should have: metrics.jsonl's and evals.jsonl's
    (the latter under evals/)."""
    steps: dict[int, dict[str, float]] = {}
    for line in run.read_metrics():
        steps.setdefault(line["step"], {}).update(_numbers(line))
    for row in run.read_evals():
        steps.setdefault(row["step"], {}).update(
            {f"evals/{k}": v for k, v in _numbers(row).items()})
    assert sorted(steps) == [0, 1, 2, 3] and "evals/greedy/accuracy" in steps[0]
    return steps


def _sampled(run: RunDir, step: int) -> list[dict]:
    lines = [json.loads(x) for x in run.rollouts.read_text().splitlines()]
    rows = attempt_rows([x for x in lines if x["step"] == step], ATTEMPTS)
    assert len(rows) == ATTEMPTS
    return rows


def test_tensorboard_scalars_equal_the_run_files(run):
    _skip_unless_installed("tensorboard")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    run_dir, _ = run
    events = EventAccumulator(str(run_dir.path / "tensorboard"),
                              size_guidance={"scalars": 0, "tensors": 0})
    events.Reload()
    for step, numbers in _expected(run_dir).items():
        for name, value in numbers.items():
            logged = {e.step: e.value for e in events.Scalars(name)}
            assert logged[step] == pytest.approx(value, rel=1e-6, abs=1e-30), name  # float32
    text = {e.step: tensor_util.make_ndarray(e.tensor_proto).item().decode()
            for e in events.Tensors("attempts/text_summary")}
    assert sorted(text) == [1, 2, 3]
    for row in _sampled(run_dir, 2):
        assert f"| {row['prompt_id']} | {row['prompt']} |" in text[2]


def test_mlflow_history_equals_the_run_files(run):
    _skip_unless_installed("mlflow")
    from mlflow.tracking import MlflowClient

    run_dir, root = run
    state = json.loads((run_dir.path / "trackers.json").read_text())["mlflow"]
    assert state["tracking_uri"] == f"sqlite:///{(run_dir.path / 'mlflow.db').resolve()}"
    client = MlflowClient(tracking_uri=state["tracking_uri"])
    logged = client.get_run(state["run_id"])
    assert logged.info.status == "FINISHED" and logged.info.run_name == "run"
    assert logged.data.params["sampling.group_size"] == "2"
    for name in {n for numbers in _expected(run_dir).values() for n in numbers}:
        history = {m.step: m.value for m in client.get_metric_history(state["run_id"], name)}
        expected = {s: n[name] for s, n in _expected(run_dir).items() if name in n}
        assert history == expected, name
    table = client.download_artifacts(state["run_id"], "attempts/step-000002.json",
                                      str(root / "mlflow-download"))
    data = json.loads(Path(table).read_text())
    rows = [dict(zip(data["columns"], values)) for values in data["data"]]
    assert rows == _sampled(run_dir, 2)


def test_wandb_offline_history_equals_the_run_files(run):
    _skip_unless_installed("wandb")
    run_dir, _ = run
    state = json.loads((run_dir.path / "trackers.json").read_text())["wandb"]
    assert state["mode"] == "offline"
    [log] = (run_dir.path / "wandb").glob(f"offline-run-*-{state['id']}/run-*.wandb")
    # W&B's own reader of its transaction log, one JSON record a line
    out = subprocess.run([sys.executable, "-m", "wandb", "leet", "inspect", "--json", str(log)],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    history: dict[int, dict] = {}
    for record in records:
        if record.get("type") == "history":
            step = int(record["history"]["step"].get("num", 0))
            history.setdefault(step, {}).update(record["history"]["item"])
    for step, numbers in _expected(run_dir).items():
        assert {k: history[step][k] for k in numbers} == numbers, step
    table = json.loads((log.parent / "files" / history[2]["attempts.path"]).read_text())
    assert table["columns"][:3] == ["prompt_id", "prompt", "completion"]
    rows = [dict(zip(table["columns"], values)) for values in table["data"]]
    assert rows == _sampled(run_dir, 2)


def test_trackio_logs_equal_the_run_files(run):
    _skip_unless_installed("trackio")
    run_dir, root = run
    reader = ("import json; from trackio.sqlite_storage import SQLiteStorage; "
              "print(json.dumps(SQLiteStorage.get_logs('rlvr', 'run')))")
    env = {**os.environ, "TRACKIO_DIR": str(root / "trackio")}
    out = subprocess.run([sys.executable, "-c", reader], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    history: dict[int, dict] = {}
    for entry in json.loads(out.splitlines()[-1]):
        history.setdefault(entry["step"], {}).update(entry)
    for step, numbers in _expected(run_dir).items():
        assert {k: history[step][k] for k in numbers} == numbers, step
    assert history[2]["attempts"]["_value"] == _sampled(run_dir, 2)


# --- a resumed run continues the same tracker run (driven directly: no training) --------

def _info(path: Path, first_step: int):
    from rlvr.runs.trackers import RunInfo

    return RunInfo("run", path, {"steps": 3}, "rlvr", first_step=first_step)


@pytest.mark.parametrize("name", ["tensorboard", "mlflow", "wandb"])
def test_resumed_run_continues_the_tracker_run(name, tmp_path, monkeypatch):
    _skip_unless_installed(name)
    from rlvr.runs.trackers import build_tracker

    for key in [k for k in os.environ if k.startswith(("WANDB_", "MLFLOW_"))]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("WANDB_SILENT", "true")
    first = build_tracker(name)
    first.start(_info(tmp_path, 1))
    for step in (1, 2, 3):  # killed after step 3; the checkpoint is at step 1
        first.log_metrics(step, {"reward/mean": float(step)})
    first.finish("killed")
    ids = json.loads((tmp_path / "trackers.json").read_text()) if name != "tensorboard" else {}
    second = build_tracker(name)
    second.start(_info(tmp_path, 2))
    for step in (2, 3):
        second.log_metrics(step, {"reward/mean": 10.0 * step})
    second.finish("finished")
    if name == "tensorboard":  # what the killed process logged from step 2 on is hidden
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

        events = EventAccumulator(str(tmp_path / "tensorboard"))
        events.Reload()
        assert [(e.step, e.value) for e in events.Scalars("reward/mean")] == [
            (1, 1.0), (2, 20.0), (3, 30.0)]
    elif name == "mlflow":  # the same MLflow run, its history appended to
        assert second.run_id == ids["mlflow"]["run_id"]
        history = second.client.get_metric_history(second.run_id, "reward/mean")
        assert sorted((m.step, m.value) for m in history) == [
            (1, 1.0), (2, 2.0), (2, 20.0), (3, 3.0), (3, 30.0)]
        assert second.client.get_run(second.run_id).info.status == "FINISHED"
    else:  # two offline segments of one W&B run id, which `wandb sync` joins
        run_id = ids["wandb"]["id"]
        assert second.run.id == run_id
        assert len(list((tmp_path / "wandb").glob(f"offline-run-*-{run_id}"))) >= 1
