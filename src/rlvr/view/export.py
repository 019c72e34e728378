"""`rlvr view RUN --export report.html`: the page as one self-contained file to share.

It holds every run's curves, the strict re-grade (computed here, in full), and the
attempts of a chosen set of steps: by default the last step and up to `max_steps`
spread evenly over the run (the whole rollouts of a long run would not fit in a page).
The page says which steps it holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rlvr.runs.rundir import atomic_write_text
from rlvr.view.page import exported_page
from rlvr.view.server import Runs


def chosen_steps(steps: list[int], max_steps: int) -> list[int]:
    """Up to `max_steps` steps spread evenly from the first to the last (both kept)."""
    if max_steps <= 0 or not steps:
        return []
    if len(steps) <= max_steps:
        return list(steps)
    if max_steps == 1:
        return [steps[-1]]
    picks = {steps[round(i * (len(steps) - 1) / (max_steps - 1))] for i in range(max_steps)}
    return sorted(picks)


def export_data(runs: Runs, max_steps: int) -> dict[str, Any]:
    overviews = runs.overviews()
    data: dict[str, Any] = {"runs": overviews, "steps": {}, "strict": {}}
    for index, overview in enumerate(overviews):
        kept = chosen_steps(overview["steps"], max_steps)
        overview["exported_steps"] = kept
        data["steps"][str(index)] = {str(s): runs.step(index, s) for s in kept}
        data["strict"][str(index)] = runs.strict_curve(index)  # no pool: all steps, now
    return data


def export_page(runs: Runs, path: str | Path, title: str, max_steps: int) -> int:
    """Write the page; returns its size in bytes."""
    text = exported_page(title, export_data(runs, max_steps))
    atomic_write_text(path, text)
    return len(text.encode("utf-8"))
