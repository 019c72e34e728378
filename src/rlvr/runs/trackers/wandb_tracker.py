"""Weights & Biases: offline unless told otherwise (logging.wandb_mode, else WANDB_MODE,
else offline), files under RUN/wandb (`wandb sync RUN/wandb/offline-run-*` uploads
them). The run id is kept in RUN/trackers.json, so a resumed run continues the same W&B
run (resume="allow"). Sampled attempts are a wandb.Table per step."""

from __future__ import annotations

import os
import uuid
from typing import Any, Sequence

from rlvr.runs.trackers.base import (ATTEMPT_COLUMNS, RunInfo, Tracker, read_state,
                                     write_state)


class WandbTracker(Tracker):
    name = "wandb"

    def start(self, info: RunInfo) -> None:
        import wandb

        self.wandb = wandb
        run_id = read_state(info.run_dir, self.name).get("id") or uuid.uuid4().hex[:12]
        mode = info.options.get("wandb_mode") or os.environ.get("WANDB_MODE") or "offline"
        # console="off": rlvr's own output is not a W&B record (and stays untouched)
        self.run = wandb.init(project=info.project, entity=info.options.get("wandb_entity")
                              or None, name=info.name, id=run_id, resume="allow",
                              dir=str(info.run_dir), config=info.config, mode=mode,
                              settings=wandb.Settings(console="off"))
        write_state(info.run_dir, self.name, {"id": run_id, "mode": mode})

    def log_metrics(self, step: int, metrics: dict[str, float]) -> None:
        self.run.log(metrics, step=step)

    def log_attempts(self, step: int, rows: Sequence[dict[str, Any]]) -> None:
        table = self.wandb.Table(columns=list(ATTEMPT_COLUMNS),
                                 data=[[row[c] for c in ATTEMPT_COLUMNS] for row in rows])
        self.run.log({"attempts": table}, step=step)

    def finish(self, status: str) -> None:
        self.run.finish(exit_code=0 if status == "finished" else 1)
