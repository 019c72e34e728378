"""The HTTP surface of `rlvr serve` (starlette):

    POST /verify       {"items": [case, ...]} -> {"verdicts": [line, ...]}, in order
    POST /verify/one   case -> line
    GET  /health       {"status": "ok", ...} (no auth: for load balancers)
    GET  /metrics      counts, queue depth, latency percentiles (?format=prometheus)

A verdict line is exactly what `rlvr verify` writes for the case. Answers, checked in
this order: 400 for a Host header that does not name this server (DNS rebinding), 401
without the shared token (when one is set; before the body is read), 415 for a POST
that is not `Content-Type: application/json` (a cross-site form or no-cors fetch),
413 for a body larger than the server reads or more items than --max-items (counted
before any is parsed, cases or not), 408 for a body that does not arrive in time, 400
for a body that is not JSON of any kind, 429 + Retry-After while the queue is full.
Items that the request's deadline overtakes get an error verdict; the rest of the
batch is kept.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from typing import Any

from rlvr.errors import UserError
from rlvr.serve.access import host_guard, is_json
from rlvr.serve.body import count_items, decode_json, encode_json, read_body
from rlvr.serve.grader import Grader
from rlvr.serve.requests import BadRequest, Batch, parse_batch, parse_one
from rlvr.serve.stats import Stats, prometheus_text
from rlvr.verifiers.base import Verdict
from rlvr.verifiers.contract import invalid_input_line, verdict_line


class ServeDependencyError(UserError, ImportError):
    """starlette/uvicorn are missing (the `serve` extra)."""


def build_app(grader: Grader, stats: Stats) -> Any:
    try:
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import Response
        from starlette.routing import Route
    except ImportError:
        raise ServeDependencyError("rlvr serve needs starlette and uvicorn: "
                                   "pip install 'rlvr[serve]'") from None
    settings = grader.settings
    max_body = int(settings.max_body_mb * 1024 * 1024)

    def reply(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> Response:
        # json.dumps as `rlvr verify` writes its lines (not starlette's JSONResponse,
        # which refuses NaN): the same case gives the same bytes either way.
        return Response(encode_json(value), status_code=status,
                        media_type="application/json", headers=headers)

    def refused(request: Request) -> Response | None:
        if not settings.token:
            return None
        given = request.headers.get("authorization", "")
        expected = f"Bearer {settings.token}"
        if hmac.compare_digest(given.encode(), expected.encode()):
            return None
        return reply({"error": "missing or wrong token (Authorization: Bearer <token>)"},
                     401, {"WWW-Authenticate": "Bearer"})

    async def answer(request: Request, parse: Any) -> Response | tuple[list, int]:
        """The verdict lines and the count of late items, or a refusal (4xx)."""
        if not is_json(request.headers.get("content-type")):
            raise BadRequest("the body must be sent as Content-Type: application/json",
                             status=415)
        body = await read_body(request, max_body, settings.limits.body_timeout_s)
        # A big body is decoded off the event loop, so other requests keep moving.
        if len(body) > _INLINE_BYTES:
            batch = await asyncio.to_thread(checked_parse, body, parse)
        else:
            batch = checked_parse(body, parse)
        n = len(batch.cases)
        if not grader.try_admit(n):
            retry = grader.retry_after_s()
            return reply({"error": f"queue full ({settings.max_items} items); retry in "
                                   f"{retry} s"}, 429, {"Retry-After": str(retry)})
        verdicts, late = await _grade(grader, batch)
        return _lines(batch, verdicts), late

    def checked_parse(body: bytes, parse: Any) -> Batch:
        """The batch, once the body is known to be JSON and no larger than --max-items:
        each item, a case or not, costs an answer line, so all of them count."""
        data = decode_json(body)
        n = count_items(data)
        if n > settings.max_items:
            raise BadRequest(f"{n} items in one request; this server takes at most "
                             f"{settings.max_items} (split the batch)", status=413)
        return parse(data)

    def endpoint(parse: Any, shape: Any) -> Any:
        async def handle(request: Request) -> Response:
            start = time.monotonic()
            response = refused(request)
            if response is not None:
                stats.record(401, 0.0)
                return response
            try:
                result = await answer(request, lambda data: parse(request, data))
            except BadRequest as exc:
                stats.record(exc.status, time.monotonic() - start)
                # an unread rest of the body would hold the connection: close it
                close = {"Connection": "close"} if exc.status in (408, 413) else None
                return reply(exc.payload, exc.status, close)
            if isinstance(result, Response):
                stats.record(result.status_code, time.monotonic() - start)
                return result
            lines, late = result
            stats.record(200, time.monotonic() - start, len(lines), late)
            return reply(shape(lines))
        return handle

    async def health(request: Request) -> Response:
        load = grader.load()
        return reply({"status": "ok", "workers": load["workers"],
                      "max_items": load["max_items"], "queued": load["queued"]})

    async def metrics(request: Request) -> Response:
        response = refused(request)
        if response is not None:
            return response
        snapshot = stats.snapshot(grader.load())
        if request.query_params.get("format") == "prometheus":
            return Response(prometheus_text(snapshot), media_type="text/plain; version=0.0.4")
        return reply(snapshot)

    # What a request may choose is the operator's policy, held by the grader.
    batch_endpoint = endpoint(lambda request, data: parse_batch(
        data, settings.deadline_s, grader.policy), lambda lines: {"verdicts": lines})
    one_endpoint = endpoint(lambda request, data: parse_one(
        data, request.query_params.get("deadline_s"), settings.deadline_s, grader.policy),
        lambda lines: lines[0])
    app = Starlette(routes=[Route("/verify", batch_endpoint, methods=["POST"]),
                            Route("/verify/one", one_endpoint, methods=["POST"]),
                            Route("/health", health), Route("/metrics", metrics)])
    return host_guard(app, settings.allowed_hosts)


# Bodies up to this size are parsed on the event loop (a trainer's usual batch: well
# under a millisecond); larger ones in a thread.
_INLINE_BYTES = 256 * 1024


async def _grade(grader: Grader, batch: Batch) -> tuple[list[Verdict], int]:
    """Verdicts for the batch's cases (already admitted), in order, and how many the
    deadline overtook: those get an error verdict and are dropped from the queue."""
    cases = batch.cases
    if not cases:
        return [], 0
    jobs = grader.submit(cases, asyncio.get_running_loop())
    _, pending = await asyncio.wait([j.future for j in jobs], timeout=batch.deadline_s)
    late = Verdict.error(f"deadline: the request's {batch.deadline_s:g} s passed before "
                         "this item was graded")
    verdicts = [j.future.result() if j.future.done() else late for j in jobs]
    for job in jobs:
        if not job.future.done():
            job.abandoned = True  # a worker that takes it later skips it
            job.future.cancel()
    return verdicts, len(pending)


def _lines(batch: Batch, verdicts: list[Verdict]) -> list[dict[str, Any]]:
    graded = iter(verdicts)
    return [invalid_input_line(item) if isinstance(item, str) else
            verdict_line(next(graded), where) for item, where in zip(batch.items, batch.wheres)]
