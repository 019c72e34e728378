"""The audit inside the trainer: every `audit_every` steps, the cheap checks over the
passed attempts of the last `audit_every` steps, and one warning line per pattern.

Costs a few regexes per passed attempt: no model call, no verifier pool. It keeps a
small per-step tally for the whole run (for the form-takeover baseline) and the
latest example of each code, not the attempts themselves. A resumed run starts with
an empty tally; `rlvr audit RUN` always reads the whole run.
"""

from __future__ import annotations

from typing import Any

from rlvr.audit.detect import (StepTally, answer_text, form_takeover, is_raised,
                               tally_attempts, window_sum)


class LiveAudit:
    def __init__(self, every: int, verifier: str) -> None:
        self.every, self.verifier = every, verifier
        self.tallies: dict[int, StepTally] = {}
        self.examples: dict[str, dict[str, Any]] = {}  # code -> latest attempt with it
        self.takeovers_warned: set[str] = set()

    def observe(self, step: int, rollouts: list[dict[str, Any]],
                metrics: dict[str, Any] | None = None) -> list[str]:
        """Tally this step's attempts; on audit steps return the warning lines. Their
        number goes in metrics["audit/warnings"] on every step (0 between audit steps),
        so every metrics line of a run has the same keys."""
        if self.every <= 0:
            return []
        _, passed = tally_attempts(self.verifier, rollouts, self.tallies)
        for attempt, codes, form in passed:
            for code in codes:
                self.examples[code] = attempt
            self.examples.setdefault(f"form:{form}", attempt)
        lines = [] if step % self.every else self.warnings(step)
        if metrics is not None:
            metrics["audit/warnings"] = len(lines)
        return lines

    def warnings(self, step: int) -> list[str]:
        window, first = self.every, step - self.every + 1
        codes = sorted({c for s, t in self.tallies.items() if s >= first for c in t.flags})
        lines = []
        for code in codes:
            count, passed = window_sum(self.tallies, step, window, lambda t, c=code: t.flags[c])
            if is_raised(code, count, passed):
                steps = f"step {step}" if first >= step else f"steps {first}-{step}"
                lines.append(f"audit warning, {steps}: {code} in {count} of "
                             f"{passed} passed attempts ({count / passed:.0%}); "
                             f"{_example(self.examples[code])}")
        for flag in form_takeover(self.tallies, window):
            if flag.name not in self.takeovers_warned:
                self.takeovers_warned.add(flag.name)
                form = flag.name.split(":", 1)[1]
                lines.append(f"audit warning, step {flag.raised_at}: form takeover, "
                             f"{flag.detail}; {_example(self.examples[f'form:{form}'])}")
        return lines


def _example(attempt: dict[str, Any]) -> str:
    answer = answer_text(attempt)
    text = " ".join(str(attempt.get("completion", "")).split())
    text = text if len(text) <= 90 else text[:87] + "..."
    return (f"e.g. step {attempt.get('step')} prompt {attempt.get('prompt_id')!r} answer "
            f"{(answer or '')[:40]!r} in {text!r} (rlvr audit RUN_DIR lists them)")
