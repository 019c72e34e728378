"""The plain-data channel: exact types only, malformed frames rejected."""

from __future__ import annotations

import os
import struct
import threading

import pytest

from rlvr.verifiers.code.sandboxed import protocol


def _roundtrip(value):
    read_fd, write_fd = os.pipe()
    writer = threading.Thread(target=protocol.write_frame, args=(write_fd, value))
    writer.start()  # a frame may exceed the pipe's buffer
    try:
        return protocol.read_frame(read_fd)
    finally:
        writer.join()
        os.close(read_fd)
        os.close(write_fd)


@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 10**40, -(10**40), 2**64, -(2**64), 1.5, -0.0, float("inf"), float("-inf"), "", "héllo",
    b"\x00\xff", [1, [2, "x"]], (1, (2,)), {"a": 1, 2: [3], (1, "t"): None}, {1, "a", (2, 3)},
    [], (), {}, set(),
])
def test_plain_values_roundtrip_with_exact_types(value):
    back = _roundtrip(value)
    assert back == value
    assert type(back) is type(value)


def test_huge_ints_cross_in_linear_time_beyond_the_decimal_digit_limit():
    value = 7 ** 200_000  # ~169,000 decimal digits, far past Python's 4300-digit cap
    assert _roundtrip(value) == value
    assert _roundtrip(-value) == -value


def test_nan_roundtrips():
    back = _roundtrip(float("nan"))
    assert type(back) is float and back != back


def test_nested_types_are_preserved():
    back = _roundtrip({"k": [(1, 2.0), {b"x"}]})
    assert type(back["k"][0]) is tuple and type(back["k"][0][1]) is float
    assert type(back["k"][1]) is set and b"x" in back["k"][1]


class AlwaysEqual:
    def __eq__(self, other):
        return True


class SneakyInt(int):
    def __eq__(self, other):
        return True


class SneakyList(list):
    pass


@pytest.mark.parametrize("value", [
    AlwaysEqual(), SneakyInt(3), SneakyList([1]), [SneakyInt(1)], {"k": AlwaysEqual()},
    frozenset({1}), range(3), iter([1]), object(), lambda: 1, 1j,
])
def test_anything_but_exact_plain_types_is_refused(value):
    with pytest.raises(TypeError):
        protocol.encode(value)


def test_cyclic_and_too_deep_values_are_refused():
    cyclic = []
    cyclic.append(cyclic)
    with pytest.raises(TypeError):
        protocol.encode(cyclic)
    deep = []
    for _ in range(protocol.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(TypeError):
        protocol.encode(deep)


@pytest.mark.parametrize("body", [
    b"not json", b'{"x": 1}', b'{"t": 1}', b'{"d": [[[1], 2]]}', b'{"s": [[1]]}',
    b'{"b": "***"}', b'{"t": [1], "s": [2]}', b"[" * 5000 + b"]" * 5000, b"\xff\xfe",
    b'{"f": "1.5"}', b'{"i": "0x10"}', b'{"i": 16}',
])
def test_malformed_frames_raise_protocol_error(body):
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(body)


def test_oversized_frame_is_refused_before_reading_it():
    read_fd, write_fd = os.pipe()
    try:
        os.write(write_fd, struct.pack(">I", protocol.MAX_FRAME_BYTES + 1))
        with pytest.raises(protocol.ProtocolError):
            protocol.read_frame(read_fd)
    finally:
        os.close(read_fd)
        os.close(write_fd)


def test_closed_channel_is_peer_closed():
    read_fd, write_fd = os.pipe()
    os.write(write_fd, b"\x00\x00")
    os.close(write_fd)
    with pytest.raises(protocol.PeerClosed):
        protocol.read_frame(read_fd)
    os.close(read_fd)
