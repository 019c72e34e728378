"""TensorBoard: event files in RUN/tensorboard (`tensorboard --logdir RUN/tensorboard`).
Scalars per step; the sampled attempts as a markdown table in the Text tab."""

from __future__ import annotations

import json
from typing import Any, Sequence

from rlvr.runs.trackers.base import ATTEMPT_COLUMNS, RunInfo, Tracker


class TensorBoardTracker(Tracker):
    name = "tensorboard"

    def start(self, info: RunInfo) -> None:
        from torch.utils.tensorboard import SummaryWriter  # needs the tensorboard package

        # A resumed run redoes the steps after its checkpoint: purge_step hides what the
        # interrupted process logged from there on, so each step shows once.
        self.writer = SummaryWriter(str(info.run_dir / "tensorboard"),
                                    purge_step=info.first_step if info.resumed else None)
        if not info.resumed:
            config = json.dumps(info.config, indent=2, default=str)
            self.writer.add_text("config", _code_block(config), 0)

    def log_metrics(self, step: int, metrics: dict[str, float]) -> None:
        for name, value in metrics.items():
            self.writer.add_scalar(name, value, step)
        self.writer.flush()  # a plot that follows the run, not the buffer

    def log_attempts(self, step: int, rows: Sequence[dict[str, Any]]) -> None:
        self.writer.add_text("attempts", markdown_table(rows), step)

    def finish(self, status: str) -> None:
        self.writer.close()


def markdown_table(rows: Sequence[dict[str, Any]]) -> str:
    """The rows as a markdown table (cells on one line, pipes escaped)."""
    def cell(value: Any) -> str:
        text = f"{value:.4g}" if isinstance(value, float) else str(value)
        return text.replace("|", "\\|").replace("\n", "\\n")

    lines = ["| " + " | ".join(ATTEMPT_COLUMNS) + " |",
             "|" + "---|" * len(ATTEMPT_COLUMNS)]
    lines += ["| " + " | ".join(cell(row[c]) for c in ATTEMPT_COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


def _code_block(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())  # markdown: verbatim
