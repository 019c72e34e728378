"""trackio (Hugging Face's local tracker): metrics in trackio's own SQLite store
(TRACKIO_DIR, default ~/.cache/huggingface/trackio; `trackio show --project NAME`),
one run per run directory, continued on resume (resume="allow"). Sampled attempts are a
trackio.Table per step."""

from __future__ import annotations

from typing import Any, Sequence

from rlvr.runs.trackers.base import ATTEMPT_COLUMNS, RunInfo, Tracker


class TrackioTracker(Tracker):
    name = "trackio"

    def start(self, info: RunInfo) -> None:
        import trackio

        self.trackio = trackio
        # embed=False and no CPU/GPU sampling threads: a run log, not a live dashboard
        trackio.init(project=info.project, name=info.name, config=info.config,
                     resume="allow", embed=False, auto_log_cpu=False, auto_log_gpu=False)

    def log_metrics(self, step: int, metrics: dict[str, float]) -> None:
        self.trackio.log(metrics, step=step)

    def log_attempts(self, step: int, rows: Sequence[dict[str, Any]]) -> None:
        table = self.trackio.Table(columns=list(ATTEMPT_COLUMNS),
                                   data=[[row[c] for c in ATTEMPT_COLUMNS] for row in rows])
        self.trackio.log({"attempts": table}, step=step)

    def finish(self, status: str) -> None:
        self.trackio.finish()
