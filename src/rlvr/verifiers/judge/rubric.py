"""The judge's reference: a rubric of weighted criteria and/or a reference answer.

Accepted shapes (an item's `reference`):
- a plain string: the reference answer, graded on one criterion ("agrees with the
  reference answer");
- {"rubric": [{"criterion": str, "weight"?: float, "id"?: str}, ...],
   "reference_answer"?: str, "pass_threshold"?: float}
  (one of "rubric" and "reference_answer" at least).

Each criterion gets a short id ("c1", "c2", ... unless given) which is the key the
judge must answer with: criterion texts are long and free-form, ids are exact.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from rlvr.verifiers.base import InvalidReference

DEFAULT_PASS_THRESHOLD = 1.0  # `passed` means fully correct, as for every verifier
_REFERENCE_KEYS = {"rubric", "reference_answer", "pass_threshold"}
_CRITERION_KEYS = {"criterion", "weight", "id"}
_ID = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}")
AGREES = "The answer agrees with the reference answer (same final result; wording may differ)."


@dataclass(frozen=True)
class Criterion:
    id: str
    text: str
    weight: float


@dataclass(frozen=True)
class Rubric:
    criteria: tuple[Criterion, ...]
    reference_answer: str | None
    pass_threshold: float

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.criteria)

    def as_key(self) -> dict[str, Any]:
        """A JSON-able form, for cache keys."""
        return {"criteria": [[c.id, c.text, c.weight] for c in self.criteria],
                "reference_answer": self.reference_answer, "threshold": self.pass_threshold}


def parse_rubric(reference: Any) -> Rubric:
    """The `Rubric` that `reference` describes; InvalidReference naming the field if not."""
    if isinstance(reference, str):
        if not reference.strip():
            raise InvalidReference("judge: reference answer is empty")
        return Rubric((Criterion("c1", AGREES, 1.0),), reference, DEFAULT_PASS_THRESHOLD)
    if not isinstance(reference, dict):
        raise InvalidReference("judge: reference must be a reference-answer string or an "
                               f"object with 'rubric'/'reference_answer', got "
                               f"{type(reference).__name__}")
    unknown = sorted(set(reference) - _REFERENCE_KEYS)
    if unknown:
        raise InvalidReference(f"judge: unknown reference field(s) {', '.join(unknown)} "
                               f"(known: {', '.join(sorted(_REFERENCE_KEYS))})")
    answer = _reference_answer(reference.get("reference_answer"))
    if "rubric" in reference:
        criteria = _criteria(reference["rubric"])
    elif answer is not None:
        criteria = (Criterion("c1", AGREES, 1.0),)
    else:
        raise InvalidReference("judge: reference needs 'rubric' or 'reference_answer'")
    return Rubric(criteria, answer, _threshold(reference.get("pass_threshold")))


def _reference_answer(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidReference("judge: 'reference_answer' must be a non-empty string")
    return value


def _threshold(value: Any) -> float:
    if value is None:
        return DEFAULT_PASS_THRESHOLD
    if not _finite_number(value) or not 0.0 <= value <= 1.0:
        raise InvalidReference(f"judge: 'pass_threshold' must be a number in [0, 1], "
                               f"got {value!r}")
    return float(value)


def _criteria(rubric: Any) -> tuple[Criterion, ...]:
    if not isinstance(rubric, list) or not rubric:
        raise InvalidReference("judge: 'rubric' must be a non-empty list of "
                               "{\"criterion\", \"weight\"} objects")
    criteria = tuple(_criterion(item, i) for i, item in enumerate(rubric))
    ids = [c.id for c in criteria]
    if len(set(ids)) != len(ids):
        raise InvalidReference(f"judge: 'rubric' criterion ids repeat: {ids}")
    return criteria


def _criterion(item: Any, index: int) -> Criterion:
    where = f"rubric[{index}]"
    if not isinstance(item, dict):
        raise InvalidReference(f"judge: '{where}' must be an object with 'criterion' and "
                               "'weight'")
    unknown = sorted(set(item) - _CRITERION_KEYS)
    if unknown:
        raise InvalidReference(f"judge: '{where}': unknown field(s) {', '.join(unknown)}")
    text = item.get("criterion")
    if not isinstance(text, str) or not text.strip():
        raise InvalidReference(f"judge: '{where}.criterion' must be a non-empty string")
    weight = item.get("weight", 1.0)
    if not _finite_number(weight) or weight <= 0:
        raise InvalidReference(f"judge: '{where}.weight' must be a positive number, "
                               f"got {weight!r}")
    cid = item.get("id", f"c{index + 1}")
    if not isinstance(cid, str) or not _ID.fullmatch(cid):
        raise InvalidReference(f"judge: '{where}.id' must match {_ID.pattern}, got {cid!r}")
    return Criterion(cid, " ".join(text.split()), float(weight))


def _finite_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value))


def weighted_score(rubric: Rubric, scores: dict[str, float], scale: float) -> float:
    """The weighted mean of per-criterion scores, each divided by `scale`: in [0, 1]."""
    total = sum(c.weight for c in rubric.criteria)
    return sum(c.weight * scores[c.id] / scale for c in rubric.criteria) / total
