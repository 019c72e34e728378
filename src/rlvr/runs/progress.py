"""Where a run's progress goes: a live tqdm bar on a terminal, plain lines in a log.

On a TTY the bar shows step/total, reward, accuracy, the latest held-out accuracy,
seconds per step and ETA; messages print above it (tqdm.write), never through it.
Elsewhere (a log file, CI, nohup, SLURM) one plain line is printed every `log_every`
steps, and for the first and last step, with every number the bar has and more.
Quiet prints nothing.
"""

from __future__ import annotations

import math
import os
import sys
from collections import deque
from typing import Any, TextIO

from tqdm import tqdm

RECENT_STEPS = 10  # the ETA is the mean of these many latest step times x steps left
BAR = "{desc} {n_fmt}/{total_fmt} |{bar}| "  # then the numbers (tqdm's postfix adds ", ")

# metrics key -> (label, format) for the numbers a step shows when it has them: the
# headline ones of an RL step or (by label) another phase's, then the details of a line
HEADLINE_FIELDS = {"step": (("reward/mean", "reward", ".3f"), ("accuracy", "acc", ".3f")),
                   "sft": (("loss", "loss", ".4f"),),
                   "rm": (("loss", "loss", ".4f"), ("accuracy", "acc", ".3f"))}
DETAIL_FIELDS = (("response_length/mean", "len", ".1f"), ("kl", "kl", ".4f"),
                 ("entropy", "ent", ".3f"), ("clip_frac", "clip", ".3f"),
                 ("grad_norm", "gnorm", ".2f"))
TIMING_FIELDS = (("tokens_per_s", "{:.0f} tok/s"), ("time/generate", "gen {:.1f}s"),
                 ("time/verify", "ver {:.1f}s"), ("time/update", "upd {:.1f}s"))


def duration(seconds: float) -> str:
    """'42s', '3m05s', '1h02m'."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def bar_width(stream: TextIO) -> dict[str, Any]:
    """tqdm's size arguments: follow the terminal's width, or a fixed 100 columns and 20
    rows where it reports none (a pty without a size, as `script` and some CI runners
    give: tqdm would hide the bar)."""
    try:
        columns = os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError):
        columns = 0
    return {"dynamic_ncols": True} if columns else {"ncols": 100, "nrows": 20}


class Progress:
    """One phase's display (`label` "step" for RL, "sft" for the warm-start, see phase()).
    `force` treats the stream as a terminal; `max_seconds` (the run's training-clock
    budget, 0 = none) caps the ETA."""

    def __init__(self, total_steps: int, quiet: bool = False, stream: TextIO | None = None,
                 force: bool = False, log_every: int = 5, max_seconds: float = 0.0,
                 label: str = "step") -> None:
        self.total, self.label = total_steps, label
        self.stream = stream or sys.stderr
        self.quiet, self.force = quiet, force
        self.live = not quiet and (force or bool(getattr(self.stream, "isatty", bool)()))
        self.log_every, self.max_seconds = max(1, log_every), max_seconds
        self.held_out_accuracy: float | None = None
        self.bar: tqdm | None = None
        self._times: deque[float] = deque(maxlen=RECENT_STEPS)
        self._unprinted: dict[str, Any] | None = None  # the last step, when no line showed it
        self._printed_any = False
        self._headline = HEADLINE_FIELDS.get(label, HEADLINE_FIELDS["step"])

    def phase(self, label: str, total_steps: int) -> "Progress":
        """A display for another phase (the warm-start) on the same stream and settings.
        In a log it prints at most ~10 lines: the demo's 600 warm-start steps at the RL
        cadence would be 120 lines before the first RL step."""
        every = max(self.log_every, math.ceil(total_steps / 10))
        return Progress(total_steps, self.quiet, self.stream, self.force, every, label=label)

    def message(self, text: str) -> None:
        if self.quiet:
            return
        if self.live:  # above every open bar on this stream, which redraw below it
            tqdm.write(text, file=self.stream)
            self.stream.flush()
        else:
            print(text, file=self.stream, flush=True)

    def held_out(self, accuracy: float) -> None:
        """The latest held-out accuracy (the "before" one; later ones come in metrics)."""
        if not math.isnan(accuracy):
            self.held_out_accuracy = accuracy

    def step(self, metrics: dict[str, Any]) -> None:
        if "time/step" in metrics:
            self._times.append(float(metrics["time/step"]))
        if "eval/accuracy" in metrics:
            self.held_out(float(metrics["eval/accuracy"]))
        if self.quiet:
            return
        if self.live:
            self._draw(metrics)
            return
        step = int(metrics["step"])
        if not self._printed_any or step % self.log_every == 0 or step >= self.total:
            self._print_line(metrics)
        else:
            self._unprinted = metrics

    def close(self) -> None:
        """Ends the bar (left on screen); in a log, the last step if no line showed it
        (a run stopped early by max_seconds or an error). Safe to call twice."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        if self._unprinted is not None:
            self._print_line(self._unprinted)

    def seconds_per_step(self) -> float | None:
        return sum(self._times) / len(self._times) if self._times else None

    def eta(self, metrics: dict[str, Any]) -> float | None:
        """Mean recent step time x steps left; with a max_seconds budget, the smaller of
        that and the budget's training seconds left."""
        per_step = self.seconds_per_step()
        if per_step is None:
            return None
        eta = per_step * max(0, self.total - int(metrics["step"]))
        if self.max_seconds and "time/train_seconds" in metrics:
            eta = min(eta, max(0.0, self.max_seconds - float(metrics["time/train_seconds"])))
        return eta

    def line(self, metrics: dict[str, Any]) -> str:
        """The plain log line of a step."""
        parts = [f"{self.label} {metrics['step']}/{self.total}",
                 *self._fields(metrics, self._headline), *self._held_out_part(),
                 *self._fields(metrics, DETAIL_FIELDS), *self._pace(metrics)]
        parts += [form.format(metrics[key]) for key, form in TIMING_FIELDS if key in metrics]
        return "  ".join(parts)

    def _print_line(self, metrics: dict[str, Any]) -> None:
        print(self.line(metrics), file=self.stream, flush=True)
        self._printed_any, self._unprinted = True, None

    def _draw(self, metrics: dict[str, Any]) -> None:
        step = int(metrics["step"])
        summary = [*self._fields(metrics, self._headline), *self._held_out_part(),
                   *self._pace(metrics)]
        bar_format = BAR + "  ".join(summary).replace("{", "{{").replace("}", "}}")
        if self.bar is None:  # the first step seen (a resumed run's is past its checkpoint)
            self.bar = tqdm(total=self.total, initial=step, desc=self.label, file=self.stream,
                            leave=True, bar_format=bar_format, **bar_width(self.stream))
            return
        self.bar.bar_format = bar_format
        self.bar.update(step - self.bar.n)

    @staticmethod
    def _fields(metrics: dict[str, Any], fields: tuple) -> list[str]:
        return [f"{label} {metrics[key]:{form}}" for key, label, form in fields
                if key in metrics]

    def _held_out_part(self) -> list[str]:
        if self.held_out_accuracy is None:
            return []
        return [f"held-out {self.held_out_accuracy:.3f}"]

    def _pace(self, metrics: dict[str, Any]) -> list[str]:
        per_step, eta = self.seconds_per_step(), self.eta(metrics)
        if per_step is None or eta is None:
            return []
        return [f"{per_step:.2f} s/step", f"ETA {duration(eta)}"]
