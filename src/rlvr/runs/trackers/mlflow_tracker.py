"""MLflow: by default a SQLite store inside the run (sqlite:///RUN/mlflow.db, artifacts
in RUN/mlartifacts; `mlflow ui --backend-store-uri sqlite:///RUN/mlflow.db`), else
logging.mlflow_tracking_uri or MLFLOW_TRACKING_URI. The experiment is logging.project;
the run id is kept in RUN/trackers.json, so a resumed run continues the same MLflow run.
Sampled attempts are a table artifact per step (attempts/step-NNNNNN.json)."""

from __future__ import annotations

import os
import re
import time
from typing import Any, Sequence

from rlvr.runs.trackers.base import (ATTEMPT_COLUMNS, RunInfo, Tracker, read_state,
                                     write_state)

STATUS = {"finished": "FINISHED", "failed": "FAILED", "killed": "KILLED"}


class MlflowTracker(Tracker):
    name = "mlflow"

    def start(self, info: RunInfo) -> None:
        from mlflow.tracking import MlflowClient

        own_store = not (info.options.get("mlflow_tracking_uri")
                         or os.environ.get("MLFLOW_TRACKING_URI"))
        uri = (f"sqlite:///{(info.run_dir / 'mlflow.db').resolve()}" if own_store else
               info.options.get("mlflow_tracking_uri") or os.environ["MLFLOW_TRACKING_URI"])
        self.client = MlflowClient(tracking_uri=uri)
        saved = read_state(info.run_dir, self.name)
        if saved.get("tracking_uri") == uri and saved.get("run_id"):
            self.run_id = saved["run_id"]
            self.client.update_run(self.run_id, status="RUNNING")
            return
        artifacts = (info.run_dir / "mlartifacts").resolve().as_uri() if own_store else None
        experiment = self.client.get_experiment_by_name(info.project)
        experiment_id = (experiment.experiment_id if experiment else
                         self.client.create_experiment(info.project, artifacts))
        self.run_id = self.client.create_run(experiment_id, run_name=info.name).info.run_id
        self._log_params(info.config)
        write_state(info.run_dir, self.name, {"run_id": self.run_id, "tracking_uri": uri})

    def _log_params(self, config: dict[str, Any]) -> None:
        from mlflow.entities import Param

        params = [Param(metric_name(k), str(v)[:6000]) for k, v in _flat(config).items()]
        for i in range(0, len(params), 100):  # MLflow takes at most 100 params a batch
            self.client.log_batch(self.run_id, params=params[i:i + 100])

    def log_metrics(self, step: int, metrics: dict[str, float]) -> None:
        from mlflow.entities import Metric

        now = int(time.time() * 1000)
        batch = [Metric(metric_name(k), v, now, step) for k, v in metrics.items()]
        self.client.log_batch(self.run_id, metrics=batch)

    def log_attempts(self, step: int, rows: Sequence[dict[str, Any]]) -> None:
        columns = {c: [row[c] for row in rows] for c in ATTEMPT_COLUMNS}
        self.client.log_table(self.run_id, data=columns,
                              artifact_file=f"attempts/step-{step:06d}.json")

    def finish(self, status: str) -> None:
        self.client.set_terminated(self.run_id, STATUS.get(status, "FAILED"))


def metric_name(name: str) -> str:
    """MLflow accepts letters, digits and _ - . space : / in names: others (the @ of
    pass@k) become _."""
    return re.sub(r"[^\w\-. :/]", "_", name)


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(data, dict) or not data:
        return {prefix: data} if prefix else {}
    flat: dict[str, Any] = {}
    for key, value in data.items():
        flat.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
    return flat
