"""`rlvr view`: a local, read-only web page for one or more runs.

    rlvr view runs/arith-20261202-101500                  # http://127.0.0.1:8765/
    rlvr view runs/a runs/b --port 9000                   # two runs side by side
    rlvr view runs/a --port 0                             # any free port (printed)
    rlvr view runs/a --export report.html                 # one self-contained file

The page shows the curves (reward, held-out accuracy and pass@k, KL, entropy, response
length, clip fractions, seconds per step), the reward beside the strict re-grade of the
passed attempts (rlvr audit's rules), and every attempt of a chosen step with its
verdict, advantage and tokens: filter by passed/failed/flagged and by reason, search
the prompts, follow one prompt across steps. A run that is still training is followed
live.

The page has no login: it binds to 127.0.0.1, and another address needs
--expose-without-auth (it shows prompts and model outputs to whoever reaches it; an
SSH tunnel, `ssh -L 8765:127.0.0.1:8765 host`, is the better way). Requests whose Host
header is not a loopback name, the bound address or an --allowed-host are refused
(DNS rebinding), and each API request has --request-timeout seconds.

Exit status: 0 stopped by Ctrl-C / SIGTERM or export written; 2 a missing run
directory, a port in use, an address beyond loopback without --expose-without-auth, or
a missing package (pip install 'rlvr[view]').
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from rlvr.cli.common import command_parser
from rlvr.cli.exit_codes import BAD_INPUT, OK



def add_parser(sub: Any, name: str, help_text: str) -> None:
    p = command_parser(sub, name, help_text, __doc__)
    p.add_argument("runs", nargs="+", metavar="RUN", help="run directories (rlvr train's)")
    p.add_argument("--port", type=int, default=8765, help="port (0: any free one; default "
                   "8765)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: "
                   "this machine only)")
    p.add_argument("--refresh", type=float, default=5.0, metavar="S",
                   help="seconds between the page's checks of a running run (default 5)")
    p.add_argument("--export", metavar="FILE", help="write a self-contained HTML page to "
                   "FILE and exit, instead of serving")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="a Host header name the browser uses, besides loopback names and "
                   "the bound address (repeatable)")
    p.add_argument("--expose-without-auth", action="store_true",
                   help="allow --host beyond loopback (the page has no login)")
    p.add_argument("--request-timeout", type=float, default=30.0, metavar="S",
                   help="an API request's time limit (default 30; 503 past it)")
    p.add_argument("--export-steps", type=int, default=20, metavar="N",
                   help="steps whose attempts the exported page holds: the last one and "
                   "up to N spread over the run (default 20)")


def run(args: argparse.Namespace) -> int:
    from rlvr.view.page import ViewDependencyError
    from rlvr.view.runinfo import ViewRun
    from rlvr.view.server import Runs

    try:
        runs = Runs([ViewRun.open(path) for path in args.runs])
    except FileNotFoundError as exc:
        print(f"rlvr view: {exc}", file=sys.stderr)
        return BAD_INPUT
    title = "rlvr view: " + ", ".join(r.name for r in runs.runs)
    try:
        if args.export:
            return _export(runs, args, title)
        return _serve(runs, args, title)
    except ViewDependencyError as exc:
        print(f"rlvr view: {exc}", file=sys.stderr)
        return BAD_INPUT


def _export(runs: Any, args: argparse.Namespace, title: str) -> int:
    from rlvr.view.export import export_page

    size = export_page(runs, args.export, title, args.export_steps)
    print(f"rlvr view: wrote {args.export} ({size / 1e6:.1f} MB)")
    return OK


def _serve(runs: Any, args: argparse.Namespace, title: str) -> int:
    from rlvr.serve.access import allowed_hosts, check_bind
    from rlvr.view.server import bind, serve

    try:
        if args.request_timeout <= 0:
            raise ValueError("--request-timeout must be positive")
        check_bind(args.host, args.expose_without_auth, "rlvr view (no login)",
                   "Add --expose-without-auth if that is meant")
        hosts = allowed_hosts(args.host, args.allowed_host)
        sock = bind(args.host, args.port)
    except ValueError as exc:
        print(f"rlvr view: {exc}", file=sys.stderr)
        return BAD_INPUT
    except OSError as exc:
        print(f"rlvr view: {exc}", file=sys.stderr)
        return BAD_INPUT
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"rlvr view: serving {len(runs.runs)} run(s) on http://{shown}:{port}/ "
          "(Ctrl-C stops)", flush=True)
    # SIGTERM ends like Ctrl-C: uvicorn shuts down cleanly and the worker process stops.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        serve(runs, sock, title, args.refresh, hosts, args.request_timeout)
    except KeyboardInterrupt:
        pass
    return OK
