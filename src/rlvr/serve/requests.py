"""Request bodies -> cases, with a clear 400 for what cannot be read.

`POST /verify` takes `{"items": [case, ...]}` where each case is a `rlvr verify` input
line, plus optional "deadline_s" (seconds, at most the server's), "source" (a name
that error lines use as `rlvr verify` uses the file name: "<source>:<line>") and
"strict". An item that is valid JSON but not a usable case gets the same
`invalid_input` verdict line `rlvr verify` writes for it, so a case file gets the same
verdicts over HTTP; with "strict": true it is a 400 naming the item and the field.

What a request may choose is the operator's policy (rlvr.verifiers.untrusted): an item
that names code (an import path the operator did not list with --plugin) or sets an
option only the operator sets (a sandbox, a cache directory, an endpoint, a key) makes
the whole request a 400 naming the item and the field, strict or not, before anything
is admitted; an item's "timeout_s" is capped by the server's limit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from rlvr.verifiers.contract import CaseError, parse_case
from rlvr.verifiers.pool import Case
from rlvr.verifiers.untrusted import OperatorPolicy, Refused

class BadRequest(Exception):
    """A 400 (or `status`) answer: the JSON body says what is wrong and where."""

    def __init__(self, message: str, status: int = 400, **where: Any) -> None:
        super().__init__(message)
        self.status = status
        self.payload = {"error": message, **where}


@dataclass
class Batch:
    """A parsed request: per item a Case, or the error text of an unusable one."""

    items: list[Case | str]
    wheres: list[str]
    deadline_s: float

    @property
    def cases(self) -> list[Case]:
        return [item for item in self.items if isinstance(item, Case)]


def parse_batch(data: Any, max_deadline_s: float, policy: OperatorPolicy) -> Batch:
    """`POST /verify`: `data` is the body's JSON value (rlvr.serve.body.decode_json)."""
    if not isinstance(data, dict):
        raise BadRequest('the body must be a JSON object {"items": [case, ...]}',
                         field="items")
    items = data.get("items")
    if not isinstance(items, list):
        raise BadRequest("'items' must be a list of cases (rlvr verify input lines)",
                         field="items")
    deadline_s = _deadline(data.get("deadline_s"), max_deadline_s)
    source = data.get("source")
    if source is not None and not isinstance(source, str):
        raise BadRequest("'source' must be a string", field="source")
    strict = data.get("strict", False)
    if not isinstance(strict, bool):
        raise BadRequest("'strict' must be true or false", field="strict")
    parsed: list[Case | str] = []
    wheres = [f"{source}:{i + 1}" if source else f"items[{i}]" for i in range(len(items))]
    for index, (record, where) in enumerate(zip(items, wheres)):
        try:
            case = parse_case(record, where)
        except CaseError as exc:
            if strict:
                raise BadRequest(str(exc), item=index, field=_field(index, exc)) from None
            parsed.append(str(exc))
            continue
        try:
            parsed.append(policy.admit(case, where))
        except Refused as exc:  # never an error line: the request chose what it may not
            raise BadRequest(str(exc), item=index, field=f"items[{index}].{exc.field}"
                             ) from None
    return Batch(parsed, wheres, deadline_s)


def parse_one(record: Any, deadline_text: str | None, max_deadline_s: float,
              policy: OperatorPolicy) -> Batch:
    """`POST /verify/one`: the body's JSON value is one case; a bad one is always a 400."""
    try:
        case = policy.admit(parse_case(record, "case"), "case")
    except CaseError as exc:
        raise BadRequest(str(exc), field=exc.field) from None
    except Refused as exc:
        raise BadRequest(str(exc), field=exc.field) from None
    deadline: Any = None
    if deadline_text is not None:
        try:
            deadline = float(deadline_text)
        except ValueError:
            raise BadRequest("query parameter deadline_s must be a number",
                             field="deadline_s") from None
    return Batch([case], ["case"], _deadline(deadline, max_deadline_s))


def _deadline(value: Any, max_deadline_s: float) -> float:
    if value is None:
        return max_deadline_s
    if (not isinstance(value, (int, float)) or isinstance(value, bool)
            or not math.isfinite(value) or value <= 0):
        raise BadRequest("'deadline_s' must be a positive number of seconds",
                         field="deadline_s")
    return min(float(value), max_deadline_s)


def _field(index: int, exc: CaseError) -> str:
    return f"items[{index}].{exc.field}" if exc.field else f"items[{index}]"
