"""The network side of rlvr's OpenEnv server, by rlvr serve's rules (rlvr.serve.access):
127.0.0.1 by default; a public bind refused without a token; with a token, every HTTP
request and WebSocket handshake but /health needs `Authorization: Bearer <token>`; the
Host header must name this server (DNS rebinding).

    python -m rlvr.environments.ecosystem.openenv_http --data tasks.jsonl --port 8010

Token: --token-file, $RLVR_SERVE_TOKEN or $RLVR_SERVE_TOKEN_FILE (as `rlvr serve`).
"""

from __future__ import annotations

import argparse
import hmac
import json
import sys
from typing import Any, Sequence

from rlvr.environments.ecosystem.optional import require
from rlvr.serve.access import allowed_hosts, check_bind, host_guard
from rlvr.serve.listen import bind
from rlvr.serve.settings import server_token

OPEN_PATHS = ("/health",)


class TokenGuard:
    """ASGI middleware: 401 (HTTP) or a refused handshake (WebSocket, close code 1008)
    without the bearer token; /health stays open for probes."""

    def __init__(self, app: Any, token: str) -> None:
        self.app, self._expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket") or scope.get("path") in OPEN_PATHS:
            return await self.app(scope, receive, send)
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if hmac.compare_digest(given, self._expected):
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            return await send({"type": "websocket.close", "code": 1008})
        body = json.dumps({"error": "missing or wrong token (Authorization: Bearer <token>)"})
        await send({"type": "http.response.start", "status": 401,
                    "headers": [(b"content-type", b"application/json")]})
        await send({"type": "http.response.body", "body": body.encode()})


def guarded(app: Any, host: str, token: str, extra_hosts: Sequence[str] = ()) -> Any:
    """`app` behind the Host check and, when a token is set, the token check."""
    app = TokenGuard(app, token) if token else app
    return host_guard(app, allowed_hosts(host, extra_hosts))


def serve(app: Any, host: str = "127.0.0.1", port: int = 8010, token: str = "",
          extra_hosts: Sequence[str] = ()) -> None:
    """Bind (after the public-bind check), then serve until interrupted."""
    uvicorn = require("uvicorn", "openenv", "the OpenEnv server")
    check_bind(host, bool(token), "the OpenEnv server",
               "Give it a token (--token-file or $RLVR_SERVE_TOKEN)")
    sock = bind(host, port, backlog=128)
    print(f"OpenEnv server on http://{host}:{sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(guarded(app, host, token, extra_hosts), log_level="warning",
                            ws="websockets")
    uvicorn.Server(config).run(sockets=[sock])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="task records (JSONL, as data.path)")
    parser.add_argument("--verifier", default=None, help="verifier for rows that name none")
    parser.add_argument("--id-field", default=None,
                        help="the rows' id field, which clients' task_id names "
                             "(default: <file stem>:<line>)")
    parser.add_argument("--plugin", action="append", default=[],
                        help="an operator's 'module:Class' verifier the rows may name")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8010)
    parser.add_argument("--token-file", default=None)
    parser.add_argument("--allowed-host", action="append", default=[])
    parser.add_argument("--max-sessions", type=int, default=64)
    args = parser.parse_args(argv)
    from rlvr.data.loading import FieldMapping, load_records
    from rlvr.verifiers.registry import add_plugins
    from rlvr.environments.ecosystem.openenv_server import TaskBook, build_app

    try:
        token, _ = server_token(None, args.token_file)
        check_bind(args.host, bool(token), "the OpenEnv server",
                   "Give it a token (--token-file or $RLVR_SERVE_TOKEN)")
        add_plugins(args.plugin, "--plugin")
        records = load_records(args.data, FieldMapping(id=args.id_field),
                               default_verifier=args.verifier)
    except ValueError as exc:  # DataError and the access rules' refusals
        print(f"openenv server: {exc}", file=sys.stderr)
        return 2
    serve(build_app(TaskBook(records), args.max_sessions), args.host, args.port, token,
          args.allowed_host)
    return 0


if __name__ == "__main__":
    sys.exit(main())
