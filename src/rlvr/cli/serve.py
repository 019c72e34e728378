"""`rlvr serve`: verifiers behind HTTP, for trainers and adapters on other machines.

    rlvr serve --port 8000                        # http://127.0.0.1:8000, no auth
    rlvr serve --port 8000 --workers 16 --host 0.0.0.0 \
        --token-file /run/secrets/rlvr-token --allowed-host grader.cluster.local

    POST /verify       {"items": [case, ...]} -> {"verdicts": [line, ...]}
    POST /verify/one   case -> line
    GET  /health       GET /metrics (?format=prometheus)

A case is a `rlvr verify` input line and a verdict line is what `rlvr verify` writes
for it, in order. Grading runs in worker processes (rlvr.verifiers.pool: a time limit
per item, a memory cap, the code sandbox). Beyond --max-items admitted items the server
answers 429 with Retry-After; a request's items not graded within --deadline (or the
request's "deadline_s") get an error verdict.

Access (docs/SECURITY.md): with a token (--token-file FILE, $RLVR_SERVE_TOKEN or
$RLVR_SERVE_TOKEN_FILE) every request but /health needs `Authorization: Bearer TOKEN`;
an empty token is refused, never taken as "no auth". It binds to 127.0.0.1 unless
--host says otherwise, and refuses any other address without a token. --token puts
the token in argv, which every local user can read: loopback only, with a warning.
The Host header must be a loopback name, the bound address or an --allowed-host;
POSTs must be `Content-Type: application/json`. Slow clients are cut off: a request
head must arrive within --header-timeout, its body within --body-timeout.

Exit status: 0 stopped by Ctrl-C / SIGTERM; 2 a port in use, a bad setting or token,
an exposed address without a token, workers that do not start, or a missing package
(pip install 'rlvr[serve]').
"""

from __future__ import annotations

import argparse
import signal
import sys
from typing import Any

from rlvr.cli.common import command_parser
from rlvr.cli.exit_codes import BAD_INPUT, OK
from rlvr.cli.operator_args import add_operator_arguments, operator_policy



def add_parser(sub: Any, name: str, help_text: str) -> None:
    p = command_parser(sub, name, help_text, __doc__)
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
                   "beyond which requests get 429; also the most items, cases or not, one "
                   "request may hold (413; default 4096)")
    p.add_argument("--deadline", type=float, default=300.0, metavar="S", help="a request's "
                   "wall-clock limit (default 300; a request may ask for less)")
    p.add_argument("--max-body-mb", type=float, default=64.0, help="largest request body "
                   "(default 64)")
    p.add_argument("--token", default=None, help="shared token for `Authorization: Bearer`, "
                   "in argv where every local user reads it: loopback only, prefer "
                   "--token-file (default $RLVR_SERVE_TOKEN; none: no auth, loopback only)")
    _add_access_arguments(p)
    add_operator_arguments(p)  # --plugin, --verifier-options


def _add_access_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--token-file", default=None, metavar="FILE", help="read the shared token "
                   "from FILE (the way to give one on a shared machine: argv is public)")
    p.add_argument("--allowed-host", action="append", default=[], metavar="NAME",
                   help="a Host header name clients use, besides loopback names and the "
                   "bound address (repeatable; '*.example.com' wildcards; '*' any)")
    p.add_argument("--header-timeout", type=float, default=10.0, metavar="S",
                   help="a request's head must arrive within S seconds (default 10)")
    p.add_argument("--body-timeout", type=float, default=60.0, metavar="S",
                   help="a request's body must arrive within S seconds (default 60)")
    p.add_argument("--max-connections", type=int, default=512, metavar="N",
                   help="open connections at most; more get 503 (default 512, kept "
                   "under the descriptor limit)")


def run(args: argparse.Namespace) -> int:
    from rlvr.serve.app import ServeDependencyError
    from rlvr.serve.server import bind, serve
    from rlvr.serve.settings import ServeSettings
    from rlvr.verifiers.pool import default_workers

    try:
        policy = operator_policy(args, args.timeout)
        token, access = _access(args)
        settings = ServeSettings(
            workers=args.workers or default_workers(), timeout_s=args.timeout,
            memory_mb=args.memory_mb or None, max_items=args.max_items,
            preload=tuple(n.strip() for n in args.preload.split(",") if n.strip()),
            deadline_s=args.deadline, max_body_mb=args.max_body_mb,
            token=token, plugins=tuple(args.plugin),
            verifier_options=policy.verifier_options, **access)
        sock = bind(args.host, args.port)
    except (ValueError, OSError) as exc:
        print(f"rlvr serve: {exc}", file=sys.stderr)
        return BAD_INPUT
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host

    def ready() -> None:
        auth = "token required" if settings.token else "no auth"
        print(f"rlvr serve: {settings.workers} worker(s) on http://{shown}:{port}/verify "
              f"({auth}; Ctrl-C stops)", flush=True)
        print("rlvr serve: Host names accepted: " + ", ".join(settings.allowed_hosts)
              + " (add others with --allowed-host)", flush=True)

    # SIGTERM ends like Ctrl-C: uvicorn shuts down and the workers stop.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        serve(settings, sock, on_ready=ready)
    except KeyboardInterrupt:
        pass
    except (ServeDependencyError, RuntimeError) as exc:
        print(f"rlvr serve: {exc}", file=sys.stderr)
        return BAD_INPUT
    return OK


def _access(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The token and the access settings; ValueError (before any socket is bound) for
    an empty token, a token in argv on an exposed address, or an exposed address
    without a token."""
    from rlvr.serve.access import allowed_hosts, check_bind, is_loopback
    from rlvr.serve.settings import server_token
    from rlvr.serve.transport import Limits

    token, source = server_token(args.token, args.token_file)
    if source == "--token":
        if not is_loopback(args.host):
            raise ValueError("--token puts the token in argv, where every user of this "
                             "machine can read it: use --token-file FILE or "
                             "$RLVR_SERVE_TOKEN to listen beyond loopback")
        print("rlvr serve: warning: --token is visible to every local user in "
              "/proc/PID/cmdline; prefer --token-file FILE or $RLVR_SERVE_TOKEN",
              file=sys.stderr)
    check_bind(args.host, bool(token), "rlvr serve without a token",
               "Give a token (--token-file FILE or $RLVR_SERVE_TOKEN)")
    limits = Limits(header_timeout_s=args.header_timeout, body_timeout_s=args.body_timeout,
                    max_connections=args.max_connections)
    return token, {"allowed_hosts": allowed_hosts(args.host, args.allowed_host),
                   "limits": limits}
