"""The final answer is the last answer the response commits to (principle 1 in
docs/rewards.md#math). This module collects the commitments in order; the verifier
judges the last of them (with any candidates joined to it as one statement, which the
hedging checks see) and nothing before it.

- boxes and marker lines (extraction.py), "the answer is X" statements and corrections
  (statements.py), then the closing sentence (final_statement.py, settled against the
  commitments by conflicts.py);
- a reasoning block is working: when commitments follow the last `</think>`, those
  before it are dropped (they were superseded anyway; dropping them also keeps a
  long reasoning's trial boxes out of the spam count).
"""

from __future__ import annotations

from rlvr.verifiers.math.conflicts import settle
from rlvr.verifiers.math.extraction import Candidate, answer_candidates
from rlvr.verifiers.math.final_statement import final_statement_candidates
from rlvr.verifiers.math.statements import statement_candidates

THINK_END = "</think>"


def _outside(candidate: Candidate, marked: list[Candidate]) -> bool:
    return not any(m.start <= candidate.start < m.end for m in marked)


def commitments(text: str, prompt: str | None = None) -> list[Candidate]:
    """Every commitment in order, the final answer last; [] when there is none."""
    marked = answer_candidates(text)
    found = sorted(marked + [s for s in statement_candidates(text) if _outside(s, marked)],
                   key=lambda c: c.start)
    think_end = text.rfind(THINK_END)
    if think_end >= 0 and any(c.start > think_end for c in found):
        found = [c for c in found if c.start > think_end]
    closing = final_statement_candidates(text)
    if not found:
        return closing
    return settle(text, found, closing, prompt)
