"""Learning curves of a run directory: training reward, held-out accuracy and response
length against wall-clock training seconds, as one PNG.

    from rlvr.runs.curves import load_series, draw_curves
    draw_curves("runs/x/learning_curve.png", {"rlvr": load_series("runs/x"),
                                               "trl": load_series("runs/x/trl")})

The x axis is training time, not steps: two trainers whose steps cost different time
are compared at equal budgets. Held-out points sit at the `train_seconds` each
evals.jsonl line records (the training clock, evaluation pauses excluded); training
points at the step's `time/train_seconds` in metrics.jsonl (the same clock at the
step's end), or for lines without it (runs before the clock existed) at the cumulative
`time/step`, which leaves out what happens between steps (checkpoints, logging). matplotlib is optional (`pip install 'rlvr[plot]'`); reading
the series needs only the standard library.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from rlvr.runs.rundir import RunDir

# pass@k / maj@k columns of an evals.jsonl line, drawn beside greedy accuracy; maj@1 is
# pass@1 again (one sample's vote is that sample), so it is left out
_AT_K = re.compile(r"^(pass@\d+|maj@(?!1$)\d+)$")

Points = tuple[list[float], list[float]]  # (x, y)


@dataclass
class CurveSeries:
    """One run's curves: each a pair of equal-length (x seconds, y) lists."""

    reward: Points
    length: Points
    accuracy: Points  # greedy
    at_k: dict[str, Points] = field(default_factory=dict)  # "pass@4" -> points


def training_points(metrics: Sequence[Mapping[str, Any]], key: str) -> Points:
    """(training seconds at the step's end, metrics[key]) over the steps that logged
    `key`: the line's time/train_seconds, else the cumulative time/step (every step's
    time counts, logged or not)."""
    xs, ys, clock = [], [], 0.0
    for line in metrics:
        clock += float(line.get("time/step") or 0.0)
        if line.get(key) is not None:
            seconds = line.get("time/train_seconds")
            xs.append(clock if seconds is None else float(seconds))
            ys.append(float(line[key]))
    return xs, ys


def eval_points(evals: Sequence[Mapping[str, Any]], key: str) -> Points:
    """(train_seconds, evals[key]) over the evaluations that report `key`."""
    pairs = [(float(e["train_seconds"]), float(e[key])) for e in evals
             if e.get(key) is not None]
    return [x for x, _ in pairs], [y for _, y in pairs]


def series(metrics: Sequence[Mapping[str, Any]],
           evals: Sequence[Mapping[str, Any]]) -> CurveSeries:
    """The curves of one run from its metrics.jsonl and evals.jsonl lines."""
    keys = sorted({k for e in evals for k in e if _AT_K.match(k)},
                  key=lambda k: (k.split("@")[0], int(k.split("@")[1])))
    return CurveSeries(reward=training_points(metrics, "reward/mean"),
                       length=training_points(metrics, "response_length/mean"),
                       accuracy=eval_points(evals, "greedy/accuracy"),
                       at_k={k: eval_points(evals, k) for k in keys})


def load_series(run_dir: str | Path) -> CurveSeries:
    """The curves of the run in `run_dir` (missing files: empty curves)."""
    run = RunDir(run_dir)
    return series(run.read_metrics(), run.read_evals())


def _pyplot() -> Any:
    try:
        import matplotlib
    except ImportError:
        raise ImportError("learning curves need matplotlib: pip install 'rlvr[plot]'") from None
    matplotlib.use("Agg")  # files only: no display on a training machine
    import matplotlib.pyplot as plt

    return plt


def draw_curves(out: str | Path, runs: Mapping[str, CurveSeries], title: str = "") -> Path:
    """Write a three-panel PNG (reward, held-out accuracy, response length against
    training seconds) with one colour per run in `runs` (label -> curves); the first
    run is drawn first. Returns the path written."""
    plt = _pyplot()
    figure, (reward, accuracy, length) = plt.subplots(3, 1, sharex=True, figsize=(8, 9))
    colours = itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    for (label, curves), colour in zip(runs.items(), colours):
        reward.plot(*curves.reward, color=colour, label=label)
        accuracy.plot(*curves.accuracy, color=colour, marker="o", label=f"{label} greedy")
        styles = itertools.cycle(["--", ":", "-.", (0, (1, 3))])
        for (key, points), style in zip(curves.at_k.items(), styles):
            accuracy.plot(*points, color=colour, linestyle=style, marker=".",
                          label=f"{label} {key}")
        length.plot(*curves.length, color=colour, label=label)
    for axes, name in ((reward, "training reward (mean)"), (accuracy, "held-out accuracy"),
                       (length, "response length (tokens)")):
        axes.set_ylabel(name)
        axes.grid(alpha=0.3)
        axes.legend(fontsize="small")
    accuracy.set_ylim(-0.02, 1.02)  # the same scale in every figure
    length.set_xlabel("training seconds (evaluation excluded)")
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    out = Path(out)
    figure.savefig(out, dpi=100)
    plt.close(figure)
    return out
