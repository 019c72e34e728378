"""The listening socket of rlvr's local servers (`rlvr serve`, `rlvr view`), bound before
anything else starts: a port in use is a clear error at once, and port 0 picks a free
one (getsockname says which)."""

from __future__ import annotations

import socket


def bind(host: str, port: int, backlog: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(backlog)
    return sock
