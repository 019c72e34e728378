"""`rlvr audit RUN`: re-read a run's passed attempts and flag patterns of reward hacking
that the verifier may not know yet (answers copied from the prompt, unevaluated
expressions, a different answer stated after the box, one answer form taking over,
training reward rising while held-out accuracy stays flat).

    rlvr audit runs/x                          # report; flagged attempts -> runs/x/audit-flagged.jsonl
    rlvr audit runs/x --out flagged.jsonl --window 5
    rlvr audit runs/x --json                   # the report as one JSON object

Exit status: 0 nothing raised, 1 a pattern was raised, 2 bad input (no such directory,
malformed line: the file and line are named). Rules: docs/rewards.md, "Auditing a run".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rlvr.cli.common import command_parser
from rlvr.cli.exit_codes import BAD_INPUT, FOUND, OK



def add_parser(sub: Any, name: str, help_text: str) -> None:
    p = command_parser(sub, name, help_text, __doc__)
    p.add_argument("run", metavar="RUN", help="run directory (holds rollouts.jsonl)")
    p.add_argument("--out", "-o", help="flagged attempts as JSONL, for labelling (default "
                   "RUN/audit-flagged.jsonl)")
    p.add_argument("--window", "-k", type=int, default=None,
                   help="steps per detection window (default 10)")
    p.add_argument("--verifier", help="the verifier that graded the run (default: the run's "
                   "config.yaml, reward.verifier or data.default_verifier)")
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace) -> int:
    from rlvr.audit.report import format_report, to_json, write_flagged
    from rlvr.audit.runaudit import DEFAULT_WINDOW, audit_run
    from rlvr.audit.rundata import RunDataError, load_run

    window = DEFAULT_WINDOW if args.window is None else args.window
    if window < 1:
        print(f"rlvr audit: --window must be >= 1, got {window}", file=sys.stderr)
        return BAD_INPUT
    try:
        result = audit_run(load_run(args.run, args.verifier), window)
    except RunDataError as exc:
        print(f"rlvr audit: {exc}", file=sys.stderr)
        return BAD_INPUT
    out = args.out or str(Path(args.run) / "audit-flagged.jsonl")
    try:
        write_flagged(result, out)
    except OSError as exc:
        print(f"rlvr audit: cannot write {out}: {exc.strerror}", file=sys.stderr)
        return BAD_INPUT
    if args.json:
        print(json.dumps(to_json(result, out), ensure_ascii=False))
    else:
        print(format_report(result, out))
    return FOUND if result.raised else OK
