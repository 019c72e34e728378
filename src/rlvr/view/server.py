"""`rlvr view`'s web server: a read-only JSON API over the run directories and the page.

    GET /                               the page
    GET /static/{app.js,style.css,plotly.min.js}
    GET /api/runs                       every run's overview (header, curves, notes)
    GET /api/runs/{i}/steps/{step}      that step's attempts, grouped by prompt
    GET /api/runs/{i}/prompt?id=JSON    one prompt's attempts at every step
    GET /api/runs/{i}/search?q=TEXT     prompts whose text contains TEXT (whole run)
    GET /api/runs/{i}/strict            reward beside the strict re-grade, so far

Starlette on uvicorn (the `view` extra), bound to 127.0.0.1 unless told otherwise.
Every request reads the files again where they changed, so a run still training is
followed; the page polls /api/runs. Nothing is written anywhere.

Only GETs, and only with a Host header naming this server (loopback names, the bound
address, --allowed-host): a page on another name that resolves here (DNS rebinding)
is refused. Each API request has `request_timeout_s` (503 past it; the scan it started
is bounded too, see RolloutsFile.find), and the connection limits of
rlvr.serve.transport hold as for `rlvr serve`.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import socket
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from rlvr.serve.access import LOOPBACK_NAMES, host_guard
from rlvr.serve.listen import bind as listen_on
from rlvr.serve.transport import Limits, uvicorn_config
from rlvr.textsafe import json_line
from rlvr.view.attempts import StrictCurve, follow_prompt, group_attempts, search_prompts
from rlvr.view.page import (ViewDependencyError, finite, plotly_js_path, served_page,
                            static_text)
from rlvr.view.runinfo import ViewRun


@dataclass
class Runs:
    """The runs a page shows, with what is worth keeping between requests."""

    runs: list[ViewRun]
    strict: list[StrictCurve] = field(init=False)
    pool: ProcessPoolExecutor | None = None

    def __post_init__(self) -> None:
        self.strict = [StrictCurve(r.rollouts.path, r.verifier()) for r in self.runs]

    def run(self, index: int) -> ViewRun:
        if not 0 <= index < len(self.runs):
            raise KeyError(f"no run {index}: the page shows runs 0..{len(self.runs) - 1}")
        return self.runs[index]

    def overviews(self) -> list[dict[str, Any]]:
        return [r.overview() for r in self.runs]

    def step(self, index: int, step: int) -> dict[str, Any]:
        run = self.run(index)
        return group_attempts(run.rollouts.read_step(step), run.verifier())

    def follow(self, index: int, prompt_id: Any) -> list[dict[str, Any]]:
        run = self.run(index)
        return follow_prompt(run.rollouts, prompt_id, run.verifier())

    def search(self, index: int, text: str, deadline: float | None = None
               ) -> list[dict[str, Any]]:
        return search_prompts(self.run(index).rollouts, text, deadline=deadline)

    def strict_curve(self, index: int) -> dict[str, Any]:
        run = self.run(index)
        if not run.rollouts.exists():  # nothing to tally: the empty curve
            return self.strict[index].curve(done=True)
        return self.strict[index].poll(run.overview()["steps"], self.pool)

    def start_pool(self) -> None:
        # spawn, not fork: the server has threads; one worker, niced: the re-grade of a
        # big run takes minutes of a core, and the page's requests come first
        self.pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"),
                                        initializer=os.nice, initargs=(10,))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=False, cancel_futures=True)
            self.pool = None


DEFAULT_REQUEST_TIMEOUT_S = 30.0


def build_app(runs: Runs, title: str, refresh_s: float,
              allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES,
              request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> Any:
    try:
        from starlette.applications import Starlette
        from starlette.responses import FileResponse, HTMLResponse, Response
        from starlette.routing import Route
    except ImportError:
        raise ViewDependencyError("rlvr view serves its page with starlette and uvicorn: "
                                  "pip install 'rlvr[view]'") from None
    plotly_path = plotly_js_path()

    def reply(value: Any, status: int = 200) -> Response:
        # Run files hold model text: json_line never fails on it (a lone surrogate read
        # back from a rollout would make starlette's JSONResponse raise, a 500).
        return Response(json_line(finite(value), allow_nan=False).encode("utf-8"), status,
                        media_type="application/json")

    def guarded(handler: Any) -> Any:
        async def endpoint(request: Any) -> Response:
            try:
                return reply(await asyncio.wait_for(_in_thread(handler, request),
                                                    request_timeout_s))
            except TimeoutError:
                return reply({"error": f"no answer within {request_timeout_s:g} s"}, 503)
            except KeyError as exc:
                return reply({"error": str(exc.args[0])}, 404)
            except ValueError as exc:
                return reply({"error": str(exc)}, 400)
        return endpoint

    async def index(request: Any) -> Response:
        return HTMLResponse(served_page(title, refresh_s))

    async def static(request: Any) -> Response:
        name = request.path_params["name"]
        if name == "plotly.min.js":
            return FileResponse(plotly_path, media_type="text/javascript",
                                headers={"Cache-Control": "max-age=86400"})
        if name not in ("app.js", "style.css"):
            return Response("not found", status_code=404)
        kind = "text/javascript" if name.endswith(".js") else "text/css"
        return Response(static_text(name), media_type=kind)

    routes = [
        Route("/", index),
        Route("/static/{name}", static),
        Route("/api/runs", guarded(lambda r: runs.overviews())),
        Route("/api/runs/{i:int}/steps/{step:int}",
              guarded(lambda r: runs.step(r.path_params["i"], r.path_params["step"]))),
        Route("/api/runs/{i:int}/prompt",
              guarded(lambda r: runs.follow(r.path_params["i"], _json_param(r, "id")))),
        Route("/api/runs/{i:int}/search", guarded(lambda r: runs.search(
            r.path_params["i"], r.query_params.get("q", ""), _deadline(request_timeout_s)))),
        Route("/api/runs/{i:int}/strict", guarded(lambda r: runs.strict_curve(r.path_params["i"]))),
    ]
    return host_guard(Starlette(routes=routes), allowed_hosts)


def _deadline(seconds: float) -> float:
    """The monotonic time by which a scan started now gives up (its request has had
    its answer by then: 503)."""
    return time.monotonic() + seconds


async def _in_thread(handler: Any, request: Any) -> Any:
    """File reads off the event loop, so a long scan does not stall other requests."""
    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(handler, request)


def _json_param(request: Any, name: str) -> Any:
    text = request.query_params.get(name)
    if text is None:
        raise ValueError(f"query parameter {name!r} is required (a JSON value)")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise ValueError(f"query parameter {name!r} must be JSON, got {text!r}") from None


def bind(host: str, port: int) -> socket.socket:
    """The listening socket (rlvr.serve.listen.bind); backlog 128: one person's browser."""
    return listen_on(host, port, backlog=128)


def serve(runs: Runs, sock: socket.socket, title: str, refresh_s: float,
          allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES,
          request_timeout_s: float = DEFAULT_REQUEST_TIMEOUT_S) -> None:
    """Serve on `sock` until interrupted (Ctrl-C, SIGTERM)."""
    try:
        import uvicorn
    except ImportError:
        raise ViewDependencyError("rlvr view serves its page with uvicorn: "
                                  "pip install 'rlvr[view]'") from None
    app = build_app(runs, title, refresh_s, allowed_hosts, request_timeout_s)
    runs.start_pool()
    # one person's browser: 64 connections are plenty, and keep the descriptors free
    config = uvicorn_config(app, 128, Limits(max_connections=64))
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        runs.close()
