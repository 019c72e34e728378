"""The live progress display: one line per step on a terminal, silent otherwise."""

from __future__ import annotations

import sys
from typing import Any, TextIO


class Progress:
    """Prints one compact line per step when `stream` is a TTY (or `force`), nothing when
    quiet. Messages (phase changes, final numbers) always print unless quiet."""

    def __init__(self, total_steps: int, quiet: bool = False, stream: TextIO | None = None,
                 force: bool = False) -> None:
        self.total = total_steps
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.live = not quiet and (force or self.stream.isatty())

    def message(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.stream, flush=True)

    def step(self, metrics: dict[str, Any]) -> None:
        if not self.live:
            return
        m = {"kl": 0.0, "entropy": 0.0, "clip_frac": 0.0, "grad_norm": 0.0, **metrics}
        line = (f"step {m['step']:>4}/{self.total}  reward {m['reward/mean']:.3f}  "
                f"acc {m.get('accuracy', 0.0):.3f}  len {m['response_length/mean']:.1f}  "
                f"kl {m['kl']:.4f}  ent {m['entropy']:.3f}  clip {m['clip_frac']:.3f}  "
                f"gnorm {m['grad_norm']:.2f}  {m['tokens_per_s']:.0f} tok/s  "
                f"gen {m['time/generate']:.1f}s  ver {m['time/verify']:.1f}s  "
                f"upd {m['time/update']:.1f}s")
        if "eval/accuracy" in m:
            line += f"  eval {m['eval/accuracy']:.3f}"
        print(line, file=self.stream, flush=True)
