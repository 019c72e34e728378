"""`rlvr serve`: verifiers behind HTTP, for trainers and adapters on other machines.

    rlvr serve --port 8000                        # http://127.0.0.1:8000
    rlvr serve --port 8000 --workers 16 --token s3cret --host 0.0.0.0

    POST /verify       {"items": [case, ...]} -> {"verdicts": [line, ...]}
    POST /verify/one   case -> line
    GET  /health       GET /metrics (?format=prometheus)

A case is a `rlvr verify` input line and a verdict line is what `rlvr verify` writes
for it, in order. Grading runs in worker processes (rlvr.verifiers.pool: a time limit
per item, a memory cap, the code sandbox). Beyond --max-items admitted items the server
answers 429 with Retry-After; a request's items not graded within --deadline (or the
request's "deadline_s") get an error verdict. With --token (or $RLVR_SERVE_TOKEN)
every request but /health needs `Authorization: Bearer TOKEN`. It binds to 127.0.0.1
unless --host says otherwise: the endpoint runs code sent to it, sandboxed, so expose it
only to your trainers, and with a token.

Exit status: 0 stopped by Ctrl-C / SIGTERM; 2 a port in use, a bad setting, workers
that do not start, or a missing package (pip install 'rlvr[serve]').
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from rlvr.cli.operator_args import add_operator_arguments, operator_policy

EXIT_INPUT = 2


def add_parser(sub: Any, name: str, help_text: str) -> None:
    p = sub.add_parser(name, help=help_text, description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--port", type=int, default=8000, help="port (0: any free one, printed; "
                   "default 8000)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: "
                   "this machine only)")
    p.add_argument("--workers", type=int, default=0, help="verifier worker processes "
                   "(default 0: every core)")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="per-item limit "
                   "(default: each verifier's own, 5 s for math)")
    p.add_argument("--memory-mb", type=int, default=4096, help="address-space limit per "
                   "worker (default 4096)")
    p.add_argument("--preload", default="math", help="comma-separated verifiers each worker "
                   "imports at start (default math)")
    p.add_argument("--max-items", type=int, default=4096, help="admitted, ungraded items "
                   "beyond which requests get 429 (default 4096)")
    p.add_argument("--deadline", type=float, default=300.0, metavar="S", help="a request's "
                   "wall-clock limit (default 300; a request may ask for less)")
    p.add_argument("--max-body-mb", type=float, default=64.0, help="largest request body "
                   "(default 64)")
    p.add_argument("--token", default=None, help="shared token for `Authorization: Bearer` "
                   "(default $RLVR_SERVE_TOKEN; unset = no auth)")
    add_operator_arguments(p)  # --plugin, --verifier-options


def run(args: argparse.Namespace) -> int:
    from rlvr.serve.app import ServeDependencyError
    from rlvr.serve.server import bind, serve
    from rlvr.serve.settings import ServeSettings, token_from_env
    from rlvr.verifiers.pool import default_workers

    try:
        policy = operator_policy(args, args.timeout)
        settings = ServeSettings(
            workers=args.workers or default_workers(), timeout_s=args.timeout,
            memory_mb=args.memory_mb or None, max_items=args.max_items,
            preload=tuple(n.strip() for n in args.preload.split(",") if n.strip()),
            deadline_s=args.deadline, max_body_mb=args.max_body_mb,
            token=token_from_env(args.token), plugins=tuple(args.plugin),
            verifier_options=policy.verifier_options)
        sock = bind(args.host, args.port)
    except (ValueError, OSError) as exc:
        print(f"rlvr serve: {exc}", file=sys.stderr)
        return EXIT_INPUT
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host

    def ready() -> None:
        auth = "token required" if settings.token else "no auth"
        print(f"rlvr serve: {settings.workers} worker(s) on http://{shown}:{port}/verify "
              f"({auth}; Ctrl-C stops)", flush=True)

    # SIGTERM ends like Ctrl-C: uvicorn shuts down and the workers stop.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        serve(settings, sock, on_ready=ready)
    except KeyboardInterrupt:
        pass
    except (ServeDependencyError, RuntimeError) as exc:
        print(f"rlvr serve: {exc}", file=sys.stderr)
        return EXIT_INPUT
    return 0
