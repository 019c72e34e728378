"""`rlvr verify`: grade completions.

Batch:   rlvr verify --input cases.jsonl --output verdicts.jsonl
         one JSON object a line in ({"verifier", "completion", "reference"}, optional
         "options", "prompt" (the task as the model saw it) and "timeout_s"), one
         verdict line out per input line, in order. An item whose
         reference is invalid gets {"score": null, "error": ...} and the command exits 1
         after every other line is written. Malformed JSON: exit 2 naming the line,
         before anything is graded.
One-off: rlvr verify math --reference '\\frac12' --completion 'so \\boxed{0.5}'
         prints the verdict as JSON. --options '{"model": "m"}' gives the verifier's
         options (e.g. the judge's endpoint).

Input lines are data, not configuration: a line names a built-in verifier or a
--plugin MODULE:CLASS you listed, never other code, and sets only the verifier's
grading options; what only you choose (a judge's endpoint, model and key variable, a
sandbox, a cache directory) goes in --verifier-options NAME=JSON. A line's "timeout_s"
is capped by --timeout (else by the verifier's own limit). A line that breaks these
rules stops the command (exit 2) naming the line and the field, before anything is
graded.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any, TextIO

from rlvr.cli.common import command_parser
from rlvr.cli.exit_codes import BAD_INPUT, FOUND, OK
from rlvr.cli.operator_args import add_operator_arguments, operator_policy
from rlvr.runs.jsonl import parse_line
from rlvr.textsafe import json_line
from rlvr.verifiers.contract import CaseError, invalid_input_line, parse_case, verdict_line
from rlvr.verifiers.pool import Case, VerifierPool
from rlvr.verifiers.untrusted import OperatorPolicy, Refused



def add_parser(sub: Any, name: str, help_text: str) -> None:
    p = command_parser(sub, name, help_text, __doc__)
    p.add_argument("verifier", nargs="?", help="one-off mode: the verifier name (e.g. math)")
    p.add_argument("--reference", help="one-off mode: the reference (JSON if it parses as "
                   "JSON object/list, else the raw string)")
    p.add_argument("--completion", help="one-off mode: the completion text ('-' reads stdin)")
    p.add_argument("--prompt", help="one-off mode: the task's prompt, for verifiers that use it "
                   "(math rejects an answer that only restates the prompt's expression)")
    p.add_argument("--options", help="one-off mode: the verifier's options as a JSON object")
    p.add_argument("--input", "-i", help="batch mode: JSONL cases ('-' for stdin)")
    p.add_argument("--output", "-o", default="-", help="batch mode: where verdicts go "
                   "(default stdout)")
    p.add_argument("--workers", type=int, default=None, help="worker processes (default: "
                   "all cores)")
    p.add_argument("--timeout", type=float, default=None, help="per-item wall-clock limit in "
                   "seconds (default: the verifier's own, 5 s for math)")
    add_operator_arguments(p)  # --plugin, --verifier-options


def run(args: argparse.Namespace) -> int:
    try:
        policy = operator_policy(args, args.timeout)
    except ValueError as exc:
        print(f"rlvr verify: {exc}", file=sys.stderr)
        return BAD_INPUT
    if args.input:
        if (args.verifier or args.completion is not None or args.reference is not None
                or args.options is not None):
            print("rlvr verify: use either --input (batch) or VERIFIER --reference "
                  "--completion (one-off), not both", file=sys.stderr)
            return BAD_INPUT
        return _run_batch(args, policy)
    if args.verifier and args.completion is not None and args.reference is not None:
        return _run_one(args)
    print("rlvr verify: give --input FILE, or VERIFIER --reference R --completion C",
          file=sys.stderr)
    return BAD_INPUT


def _parse_reference(text: str) -> Any:
    stripped = text.strip()
    if stripped[:1] in "{[":
        try:
            return json.loads(stripped)
        except json.JSONDecodeError:
            pass
    return text


def _run_one(args: argparse.Namespace) -> int:
    try:
        options = json.loads(args.options) if args.options is not None else {}
    except json.JSONDecodeError:
        options = None
    if not isinstance(options, dict):
        print("rlvr verify: --options must be a JSON object", file=sys.stderr)
        return BAD_INPUT
    completion = sys.stdin.read() if args.completion == "-" else args.completion
    case = Case(args.verifier, completion, _parse_reference(args.reference), options,
                prompt=args.prompt)
    with VerifierPool(workers=1, timeout_s=args.timeout) as pool:
        verdict = pool.verify([case])[0]
    print(json_line(verdict_line(verdict)))
    return FOUND if verdict.is_invalid else OK


def _read_cases(stream: TextIO, source: str, policy: OperatorPolicy
                ) -> tuple[list[Case | str], str | None]:
    """Cases in order; an item that is valid JSON but not a usable case is kept as its
    error string (it becomes an error line). A line that names code or sets an
    operator's option is fatal. Returns (items, fatal_error)."""
    items: list[Case | str] = []
    for number, line in enumerate(stream, start=1):
        if not line.strip():
            return items, f"{source}:{number}: empty line (one JSON object per line expected)"
        record, problem = parse_line(line, objects=False)  # not an object: an error item
        if problem is not None:
            return items, f"{source}:{number}: {problem}"
        try:
            items.append(_to_case(record, f"{source}:{number}", policy))
        except Refused as exc:
            return items, str(exc)
    return items, None


def _to_case(record: Any, where: str, policy: OperatorPolicy) -> Case | str:
    try:
        case = parse_case(record, where)
    except CaseError as exc:
        return str(exc)
    return policy.admit(case, where)


def _run_batch(args: argparse.Namespace, policy: OperatorPolicy) -> int:
    source = "<stdin>" if args.input == "-" else args.input
    try:
        stream = sys.stdin if args.input == "-" else open(args.input, encoding="utf-8")
    except OSError as exc:
        print(f"rlvr verify: cannot read {source}: {exc.strerror}", file=sys.stderr)
        return BAD_INPUT
    with stream:
        items, fatal = _read_cases(stream, source, policy)
    if fatal:
        print(f"rlvr verify: {fatal}", file=sys.stderr)
        return BAD_INPUT
    cases = [item for item in items if isinstance(item, Case)]
    with VerifierPool(workers=args.workers, timeout_s=args.timeout) as pool:
        verdicts = iter(pool.verify(cases))
    lines = []
    for number, item in enumerate(items, start=1):
        if isinstance(item, str):
            lines.append(invalid_input_line(item))
        else:
            lines.append(verdict_line(next(verdicts), f"{source}:{number}"))
    out = sys.stdout if args.output == "-" else open(args.output, "w", encoding="utf-8")
    with out if out is not sys.stdout else contextlib.nullcontext():
        for line in lines:
            out.write(json_line(line) + "\n")
    invalid = sum(1 for line in lines if line["score"] is None)
    if invalid:
        print(f"rlvr verify: {invalid} of {len(lines)} item(s) had invalid input; "
              f"see their 'error' fields", file=sys.stderr)
        return FOUND
    return OK

