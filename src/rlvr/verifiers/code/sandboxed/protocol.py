"""The narrow channel between the trusted judge and the untrusted candidate process.

Only plain data crosses it: None, bool, int, float, str, bytes, list, tuple, dict, set,
checked by exact type (`type(x) is int`, never `isinstance`), so an object with an
always-true `__eq__`, an int subclass or anything carrying behaviour cannot be sent.
The wire format is a 4-byte big-endian length and a JSON document; JSON parsing creates
only built-in objects, and the types JSON lacks are tagged objects:
    tuple -> {"t": [...]}, set -> {"s": [...]}, bytes -> {"b": "<base64>"},
    dict  -> {"d": [[key, value], ...]}          (keys of any hashable plain type)
    nan/inf -> {"f": "nan"}, int beyond 64 bits -> {"i": "<hex>"} (decimal parsing is
    quadratic and capped at 4300 digits; hex is linear and uncapped)
Every JSON object on the wire is such a tag, so a str can never be mistaken for one.

Decoding is bounded so that a hostile peer cannot exhaust the judge: a frame holds at
most `limit` bytes (CANDIDATE_FRAME_BYTES for what a candidate sends), at most
MAX_CONTAINERS lists and objects, and nests at most MAX_DEPTH deep. Within those bounds
the decoded value costs at most a few hundred MB; anything that still goes wrong while
decoding (MemoryError included) is a ProtocolError, never another exception.

This file is stdlib-only: it is imported inside the sandbox too (sandboxed/ is the one
directory of rlvr bound into it), where neither rlvr nor site-packages exist.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import struct

MAX_FRAME_BYTES = 32 * 1024 * 1024      # trusted frames (the verifier's job spec)
CANDIDATE_FRAME_BYTES = 8 * 1024 * 1024  # what a candidate may send the judge
MAX_CONTAINERS = 1_000_000               # lists + JSON objects in one frame
MAX_DEPTH = 100
_HEADER = struct.Struct(">I")
_SCALARS = (type(None), bool, int, str)
_BIG_INT = 1 << 64
_HEX = re.compile(r"-?[0-9a-f]+")
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')


class ProtocolError(Exception):
    """The peer sent something that is not a well-formed frame of plain data."""


class PeerClosed(ProtocolError):
    """The peer closed the channel (the process exited or was killed)."""


def to_wire(value: object, depth: int = 0) -> object:
    """`value` as a JSON-able tree; TypeError for anything that is not exactly plain data."""
    if depth > MAX_DEPTH:
        raise TypeError(f"value nested deeper than {MAX_DEPTH} levels (or cyclic)")
    kind = type(value)
    if kind is int and not -_BIG_INT < value < _BIG_INT:
        return {"i": format(value, "x")}  # hex: linear time, no str-digit limit
    if kind in _SCALARS:
        return value
    if kind is float:
        return value if math.isfinite(value) else {"f": repr(value)}
    if kind is list:
        return [to_wire(item, depth + 1) for item in value]
    if kind is tuple:
        return {"t": [to_wire(item, depth + 1) for item in value]}
    if kind is set:
        return {"s": [to_wire(item, depth + 1) for item in value]}
    if kind is bytes:
        return {"b": base64.b64encode(value).decode("ascii")}
    if kind is dict:
        return {"d": [[to_wire(k, depth + 1), to_wire(v, depth + 1)] for k, v in value.items()]}
    raise TypeError(f"{kind.__module__}.{kind.__qualname__} is not plain data")


def _hashable(value: object) -> object:
    try:
        hash(value)
    except TypeError:
        raise ProtocolError(f"unhashable {type(value).__name__} used as a key or set item")
    return value


def from_wire(tree: object, depth: int = 0) -> object:
    """Rebuild plain data from a JSON tree, rejecting anything off the format."""
    if depth > MAX_DEPTH:
        raise ProtocolError("value nested too deeply")
    kind = type(tree)
    if kind in _SCALARS or kind is float:
        return tree
    if kind is list:
        return [from_wire(item, depth + 1) for item in tree]
    if kind is not dict or len(tree) != 1:
        raise ProtocolError(f"unexpected {kind.__name__} on the wire")
    (tag, body), = tree.items()
    if tag == "f" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "i" and type(body) is str and _HEX.fullmatch(body):
        return int(body, 16)
    if tag == "b" and type(body) is str:
        try:
            return base64.b64decode(body.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise ProtocolError("malformed bytes")
    if type(body) is not list:
        raise ProtocolError(f"malformed tag {tag!r}")
    if tag == "t":
        return tuple(from_wire(item, depth + 1) for item in body)
    if tag == "s":
        return {_hashable(from_wire(item, depth + 1)) for item in body}
    if tag == "d":
        result = {}
        for pair in body:
            if type(pair) is not list or len(pair) != 2:
                raise ProtocolError("malformed dict entry")
            result[_hashable(from_wire(pair[0], depth + 1))] = from_wire(pair[1], depth + 1)
        return result
    raise ProtocolError(f"unknown tag {tag!r}")


def encode(value: object, limit: int = MAX_FRAME_BYTES) -> bytes:
    """One frame holding `value` (TypeError if it is not plain data or exceeds `limit`)."""
    body = json.dumps(to_wire(value), separators=(",", ":")).encode("utf-8")
    if len(body) > limit:
        raise TypeError(f"value too large to send ({len(body)} bytes, limit {limit})")
    return _HEADER.pack(len(body)) + body


def _containers(body: bytes) -> int:
    """How many lists and objects `body` holds. Counting brackets is an upper bound
    (brackets inside strings count too); only when that bound is over the limit are
    the strings cut out for the exact count."""
    count = body.count(b"[") + body.count(b"{")
    if count > MAX_CONTAINERS:
        bare = _JSON_STRING.sub(b"", body)
        count = bare.count(b"[") + bare.count(b"{")
    return count


def decode(body: bytes) -> object:
    """The value in a frame's body. Every failure, MemoryError and RecursionError
    included, is a ProtocolError: the peer sent something it should not have."""
    try:
        if _containers(body) > MAX_CONTAINERS:
            raise ProtocolError(f"more than {MAX_CONTAINERS} lists and objects")
        # bytes straight to json: no decoded str copy (up to 4 bytes per character)
        return from_wire(json.loads(body))
    except ProtocolError:
        raise
    except RecursionError:
        raise ProtocolError("value nested too deeply")
    except (ValueError, MemoryError) as exc:  # UnicodeDecodeError is a ValueError
        raise ProtocolError(f"undecodable frame: {type(exc).__name__}")


def write_frame(fd: int, value: object) -> None:
    write_all(fd, encode(value))


def write_all(fd: int, frame: bytes) -> None:
    data = memoryview(frame)
    while data:
        written = os.write(fd, data)
        data = data[written:]


def _read_exact(fd: int, size: int) -> bytes:
    chunks, left = [], size
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise PeerClosed("channel closed")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int, limit: int = MAX_FRAME_BYTES) -> object:
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    if size > limit:
        raise ProtocolError(f"frame of {size} bytes exceeds the limit of {limit}")
    return decode(_read_exact(fd, size))
