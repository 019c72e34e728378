"""Run `rlvr serve`: bind the socket first (a port in use fails at once, before any
worker starts), start the grader's worker processes, then serve on uvicorn until
Ctrl-C or SIGTERM, and stop the workers on the way out."""

from __future__ import annotations

import socket
from typing import Callable

from rlvr.serve.listen import bind as listen_on
from rlvr.serve.app import ServeDependencyError, build_app
from rlvr.serve.grader import Grader
from rlvr.serve.settings import ServeSettings
from rlvr.serve.stats import Stats
from rlvr.serve.transport import uvicorn_config


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (rlvr.serve.listen.bind); backlog 1024: many trainers'
    batches queue here."""
    return listen_on(host, port, backlog=1024)


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
        config = uvicorn_config(app, 1024, settings.limits)
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        grader.close()
