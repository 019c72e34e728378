"""From graded attempts to the numbers of an evaluation: overall and per category.

Metric names (the keys of `summarize`'s dict, also logged by `rlvr train`):
  greedy/accuracy, greedy/score      mean `passed` and mean score of the greedy answers
  sample/accuracy, sample/score      the same over every sampled answer (= pass@1 from n)
  pass@k                             unbiased pass@k from the n samples, for each k <= n
  maj@k                              majority-vote accuracy, for each k <= n, when the
                                     verifier's details have an answer field
  {greedy,sample}/truncated          share of answers cut by max_new_tokens
  {greedy,sample}/ifeval_*           IFEval's prompt/instruction-level strict (and loose)
                                     accuracy, when the verdicts carry per-instruction results
  {greedy,sample}/errors             share of answers whose check timed out or crashed
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Sequence

from rlvr.evaluation.metrics import Vote, answer_key, ifeval_accuracy, maj_at_k, mean, pass_at_k
from rlvr.verifiers.base import REASON_ERROR, REASON_TIMEOUT, Verdict

# Where a verdict's details name the final answer, most canonical first (the math
# verifier reports "answer" as extracted and "normalized" after normalisation).
ANSWER_KEYS = ("normalized", "answer")


@dataclass
class Attempt:
    """One generated answer to one record, with its verdict."""

    record_id: str
    mode: str  # "greedy" or "sample"
    index: int  # sample index within the record (0 for greedy)
    completion: str
    finish_reason: str
    num_tokens: int
    verdict: Verdict
    secondary: dict[str, Verdict] = field(default_factory=dict)  # e.g. IFEval "loose"
    # IFEval records: how many instructions the prompt has, so a check that timed out or
    # crashed (no per-instruction results) counts as following none of them.
    instructions: int = 0

    def to_dict(self) -> dict[str, Any]:
        out = {"id": self.record_id, "mode": self.mode, "index": self.index,
               "completion": self.completion, "finish_reason": self.finish_reason,
               "num_tokens": self.num_tokens, "verdict": self.verdict.to_dict()}
        if self.secondary:
            out["secondary"] = {k: v.to_dict() for k, v in self.secondary.items()}
        return out


class _Correct:
    """The one ballot key of every correct answer (see `ballot`)."""

    def __repr__(self) -> str:
        return "<correct>"


CORRECT = _Correct()


def ballot(verdict: Verdict, answer_keys: Sequence[str]) -> Vote:
    """A sample's vote. Correct answers all equal the gold, so they vote together however
    they are written ("0.5" and "\\frac{1}{2}"); a wrong answer votes for its extracted
    (normalised) text. Wrong answers that are equal but written differently therefore
    split their votes, which can only favour the correct answer: maj@k is an upper
    bound by that margin (grading pairs of wrong answers against each other would close
    it, at O(k^2) more checks). A sample with no extracted answer does not vote."""
    key = answer_key(verdict.details, answer_keys)
    if verdict.passed:
        return Vote(CORRECT, True)
    return Vote(key, False)


def _grouped(attempts: Sequence[Attempt]) -> dict[str, list[Attempt]]:
    groups: dict[str, list[Attempt]] = defaultdict(list)
    for attempt in attempts:
        groups[attempt.record_id].append(attempt)
    for group in groups.values():
        group.sort(key=lambda a: a.index)
    return groups


def _instruction_results(verdict: Verdict | None, expected: int) -> list[bool] | None:
    """Per-instruction results of an ifeval verdict (details["instructions"] is a list
    of {"id", "followed"}); all False for a timed-out or crashed check of a prompt with
    `expected` instructions; None when there is nothing to count."""
    rows = verdict.details.get("instructions") if verdict is not None else None
    if not isinstance(rows, list) or not rows:
        failed = verdict is not None and verdict.reason in (REASON_TIMEOUT, REASON_ERROR)
        return [False] * expected if failed and expected else None
    values = [r.get("followed") if isinstance(r, dict) else None for r in rows]
    return values if all(isinstance(v, bool) for v in values) else None  # type: ignore[return-value]


def _ifeval(prefix: str, attempts: Sequence[Attempt]) -> dict[str, float]:
    """Strict numbers from each attempt's own verdict, loose ones from its "loose"
    secondary verdict (the runner adds one for ifeval records)."""
    strict = [_instruction_results(a.verdict, a.instructions) for a in attempts]
    if not attempts or any(row is None for row in strict):
        return {}
    loose = [_instruction_results(a.secondary.get("loose"), a.instructions) for a in attempts]
    counts = ifeval_accuracy(strict, None if any(r is None for r in loose) else loose)  # type: ignore[arg-type]
    out = {f"{prefix}/ifeval_prompt_strict": counts.prompt_strict,
           f"{prefix}/ifeval_instruction_strict": counts.instruction_strict}
    if counts.prompt_loose is not None:
        out[f"{prefix}/ifeval_prompt_loose"] = counts.prompt_loose
        out[f"{prefix}/ifeval_instruction_loose"] = counts.instruction_loose  # type: ignore[assignment]
    return out


def _basic(prefix: str, attempts: Sequence[Attempt]) -> dict[str, float]:
    if not attempts:
        return {}
    verdicts = [a.verdict for a in attempts]
    return {f"{prefix}/accuracy": mean(float(v.passed) for v in verdicts),
            f"{prefix}/score": mean(v.score for v in verdicts),
            f"{prefix}/truncated": mean(float(a.finish_reason == "length") for a in attempts),
            f"{prefix}/errors": mean(float(v.reason in (REASON_TIMEOUT, REASON_ERROR))
                                     for v in verdicts),
            **_ifeval(prefix, attempts)}


def _sampled(attempts: Sequence[Attempt], ks: Sequence[int], answer_keys: Sequence[str],
             max_subsets: int) -> dict[str, float]:
    groups = _grouped(attempts)
    if not groups:
        return {}
    sizes = {len(g) for g in groups.values()}
    n = min(sizes)  # every record has n samples unless generation was cut short
    out: dict[str, float] = {}
    usable = sorted({k for k in ks if 1 <= k <= n})
    for k in usable:
        out[f"pass@{k}"] = mean(pass_at_k(len(g), sum(a.verdict.passed for a in g), k)
                                for g in groups.values())
    ballots = {rid: [ballot(a.verdict, answer_keys) for a in g] for rid, g in groups.items()}
    # maj@k for verifiers that report an answer at all (math: even when none was found)
    if any(name in a.verdict.details for a in attempts for name in answer_keys):
        for k in usable:
            out[f"maj@{k}"] = mean(maj_at_k(votes, k, max_subsets, seed=rid)
                                   for rid, votes in ballots.items())
    return out


def summarize(greedy: Sequence[Attempt], samples: Sequence[Attempt], ks: Sequence[int],
              answer_keys: Sequence[str] = ANSWER_KEYS,
              max_subsets: int = 2000) -> dict[str, float]:
    """Every metric of one set of attempts (see the module docstring for the names)."""
    return {**_basic("greedy", greedy), **_basic("sample", samples),
            **_sampled(samples, ks, answer_keys, max_subsets)}


def breakdown(greedy: Sequence[Attempt], samples: Sequence[Attempt], ks: Sequence[int],
              categories: dict[str, dict[str, Any]], keys: Sequence[str],
              answer_keys: Sequence[str] = ANSWER_KEYS) -> dict[str, dict[str, dict[str, float]]]:
    """Metrics per category value: {key: {value: metrics}} for each metadata key in
    `keys` (e.g. MATH's subject and level). `categories` maps record id -> metadata."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for key in keys:
        values = sorted({str(meta[key]) for meta in categories.values() if key in meta})
        if not values:
            continue
        out[key] = {}
        for value in values:
            ids = {rid for rid, meta in categories.items() if str(meta.get(key)) == value}
            metrics = summarize([a for a in greedy if a.record_id in ids],
                                [a for a in samples if a.record_id in ids], ks, answer_keys)
            out[key][value] = {"count": float(len(ids)), **metrics}
    return out


def ifeval_by_instruction(attempts: Sequence[Attempt]) -> dict[str, dict[str, float]]:
    """Instruction-level accuracy per instruction group (the part of the id before ':',
    as IFEval's per-category tables): {group: {"count", "strict", "loose"?}} over the
    given attempts (the greedy ones, or the samples)."""
    tallies: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # count, strict, loose
    has_loose = True
    for attempt in attempts:
        rows = attempt.verdict.details.get("instructions")
        if not isinstance(rows, list):
            continue
        loose = attempt.secondary.get("loose")
        loose_rows = loose.details.get("instructions") if loose is not None else None
        has_loose = has_loose and isinstance(loose_rows, list) and len(loose_rows) == len(rows)
        for i, row in enumerate(rows):
            group = str(row.get("id", "?")).split(":")[0]
            tally = tallies[group]
            tally[0] += 1
            tally[1] += bool(row.get("followed"))
            if has_loose:
                tally[2] += bool(loose_rows[i].get("followed"))  # type: ignore[index]
    out = {}
    for group, (count, strict, loose) in sorted(tallies.items()):
        out[group] = {"count": float(count), "strict": strict / count}
        if has_loose:
            out[group]["loose"] = loose / count
    return out
