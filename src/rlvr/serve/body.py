"""Request and answer bodies of `rlvr serve`, bounded and total: every byte string a
client can send becomes a value or a clear 4xx, and every answer becomes bytes.

- `read_body`: at most `limit` bytes (413, checked on the declared length before
  anything is read, and again while a chunked body streams in), within `timeout_s`
  (408: a body trickled a byte at a time cannot hold the connection for long).
- `decode_json`: 400 for anything that is not one JSON value in strict UTF-8: bad
  bytes, surrogates encoded as UTF-8, nesting deeper than the parser's recursion
  limit, integers past Python's int-string digit limit. (A `\\ud800` escape is valid
  JSON: it decodes to a lone surrogate, which the answer encoder copes with.)
- `count_items`: the items of a batch body, cases or not, before any is parsed.
- `encode_json`: UTF-8 JSON as `rlvr verify` writes it, or, when a string holds a lone
  surrogate (which UTF-8 cannot carry), the same JSON with non-ASCII escaped: no
  completion text can fail a batch's answer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rlvr.serve.requests import BadRequest


async def read_body(request: Any, limit: int, timeout_s: float) -> bytes:
    """The body, refused with 413 past `limit` bytes before it is all in memory, and
    with 408 when it has not all arrived within `timeout_s`."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > limit:
        raise BadRequest(f"body of {int(declared)} bytes; this server reads at most {limit}",
                         status=413)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(timeout_s):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    raise BadRequest(f"body larger than {limit} bytes", status=413)
                chunks.append(chunk)
    except TimeoutError:
        raise BadRequest(f"the body did not arrive within {timeout_s:g} s", status=408) from None
    return b"".join(chunks)


def decode_json(body: bytes) -> Any:
    """The JSON value of `body`; BadRequest (400) for any body that is not one."""
    try:
        text = body.decode("utf-8")  # strict: json.loads(bytes) would let surrogates in
    except UnicodeDecodeError as exc:
        raise BadRequest(f"the body is not UTF-8 (byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BadRequest(f"malformed JSON: {exc.msg} (line {exc.lineno} column "
                         f"{exc.colno})") from None
    except RecursionError:
        raise BadRequest("malformed JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer past sys.get_int_max_str_digits()
        raise BadRequest(f"malformed JSON: {exc}") from None


def count_items(data: Any) -> int:
    """How many items a `POST /verify` body holds (every element of "items"; 0 when the
    body is not that shape, which the parser then refuses by name)."""
    if isinstance(data, dict) and isinstance(data.get("items"), list):
        return len(data["items"])
    return 0


def encode_json(value: Any) -> bytes:
    """`value` as UTF-8 JSON; never fails on a string's content (see the module doc)."""
    text = json.dumps(value, ensure_ascii=False)
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: only this answer pays for the escape
        return json.dumps(value, ensure_ascii=True).encode("ascii")
