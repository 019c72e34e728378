"""Run `rlvr serve`: bind the socket first (a port in use fails at once, before any
worker starts), start the grader's worker processes, then serve on uvicorn until
Ctrl-C or SIGTERM, and stop the workers on the way out."""

from __future__ import annotations

import socket
from typing import Callable

from rlvr.serve.app import ServeDependencyError, build_app
from rlvr.serve.grader import Grader
from rlvr.serve.settings import ServeSettings
from rlvr.serve.stats import Stats


def bind(host: str, port: int) -> socket.socket:
    """The listening socket; port 0 picks a free one (getsockname says which)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(1024)
    return sock


def serve(settings: ServeSettings, sock: socket.socket,
          on_ready: Callable[[], None] = lambda: None) -> None:
    """Serve on `sock` until interrupted; `on_ready` runs once the workers are up."""
    try:
        import uvicorn
    except ImportError:
        raise ServeDependencyError("rlvr serve needs starlette and uvicorn: "
                                   "pip install 'rlvr[serve]'") from None
    grader = Grader(settings)
    app = build_app(grader, Stats())
    grader.start()
    try:
        on_ready()
        # One event loop is enough: it only parses JSON and hands items to the
        # grader's threads; the grading runs in the worker processes.
        config = uvicorn.Config(app, log_level="warning", access_log=False,
                                timeout_keep_alive=30, backlog=1024)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        grader.close()
