"""The settings of one `rlvr serve` process, declared once (the CLI fills them), and
where its shared token comes from."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from rlvr.serve.access import LOOPBACK_NAMES
from rlvr.serve.transport import Limits

TOKEN_ENV = "RLVR_SERVE_TOKEN"
TOKEN_FILE_ENV = "RLVR_SERVE_TOKEN_FILE"


@dataclass(frozen=True)
class ServeSettings:
    """workers:        verifier worker processes (each grades one item at a time).
    timeout_s:      per-item limit; None = each verifier's own (5 s for math).
    memory_mb:      address-space limit per worker (a memory bomb scores "error").
    preload:        verifier names every worker imports at start.
    max_items:      items admitted and not yet graded, over all requests; a request
                    that would pass it gets 429 + Retry-After (the memory bound). One
                    request may hold at most this many items, cases or not (413).
    max_body_mb:    the largest request body read (413 beyond).
    deadline_s:     a request's wall-clock limit (a request may ask for less); items
                    not graded by then get an error verdict.
    token:          shared secret: every request but /health needs
                    `Authorization: Bearer <token>` ("" = no auth: loopback only,
                    the CLI refuses anything else).
    allowed_hosts:  Host header values accepted (DNS rebinding: a page on another
                    name that resolves here is refused); "*" accepts any.
    limits:         connection and read limits (rlvr.serve.transport.Limits).
    plugins:        the operator's "module:Class" verifiers (--plugin); the only import
                    paths a request may name.
    verifier_options: the operator's options per verifier (--verifier-options), e.g. a
                    judge's base_url; a request sets only a verifier's request options
                    (rlvr.verifiers.untrusted).
    """

    workers: int = 1
    timeout_s: float | None = None
    memory_mb: int | None = 4096
    preload: tuple[str, ...] = ("math",)
    max_items: int = 4096
    max_body_mb: float = 64.0
    deadline_s: float = 300.0
    token: str = ""
    plugins: tuple[str, ...] = ()
    verifier_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    allowed_hosts: tuple[str, ...] = LOOPBACK_NAMES
    limits: Limits = field(default_factory=Limits)

    def __post_init__(self) -> None:
        checks = {"workers": self.workers >= 1, "max_items": self.max_items >= 1,
                  "max_body_mb": self.max_body_mb > 0, "deadline_s": self.deadline_s > 0,
                  "timeout_s": self.timeout_s is None or self.timeout_s > 0}
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"serve setting {bad[0]} must be positive")


def token_from_env(given: str | None) -> str:
    """The client's token: the one given, else $RLVR_SERVE_TOKEN, else the file named by
    $RLVR_SERVE_TOKEN_FILE, else "" (no Authorization header)."""
    if given is not None:
        return given
    if os.environ.get(TOKEN_ENV):
        return os.environ[TOKEN_ENV]
    path = os.environ.get(TOKEN_FILE_ENV)
    return read_token_file(path, TOKEN_FILE_ENV) if path else ""


def server_token(argv_token: str | None, token_file: str | None) -> tuple[str, str]:
    """The server's token and where it came from ("" and "none" when nowhere).

    One source at most: --token-file, --token (argv: visible to every local user in
    /proc/PID/cmdline, so the CLI warns), $RLVR_SERVE_TOKEN, $RLVR_SERVE_TOKEN_FILE.
    An empty token is a ValueError wherever it comes from: it never means "no auth".
    """
    sources = {"--token-file": token_file, "--token": argv_token,
               f"${TOKEN_ENV}": os.environ.get(TOKEN_ENV),
               f"${TOKEN_FILE_ENV}": os.environ.get(TOKEN_FILE_ENV)}
    given = {name: value for name, value in sources.items() if value is not None}
    flags = [name for name in given if name.startswith("--")]
    if len(flags) > 1:
        raise ValueError("give the token one way: --token-file or --token, not both")
    if flags:  # an explicit flag wins over the environment
        given = {flags[0]: given[flags[0]]}
    elif len(given) > 1:
        raise ValueError(f"both ${TOKEN_ENV} and ${TOKEN_FILE_ENV} are set: unset one")
    if not given:
        return "", "none"
    name, value = next(iter(given.items()))
    if name.endswith("FILE") or name == "--token-file":
        value = read_token_file(value, name)
    if not value.strip():
        raise ValueError(f"{name} is empty: an empty token would mean no auth; give a "
                         "token or leave it unset (loopback only)")
    return value, name


def read_token_file(path: str, what: str) -> str:
    """The token in `path`, without surrounding whitespace (a trailing newline is usual)."""
    if not path:
        raise ValueError(f"{what} names no file")
    try:
        text = Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{what}: cannot read the token file {path}: "
                         f"{getattr(exc, 'strerror', None) or exc}") from None
    if not text:
        raise ValueError(f"{what}: the token file {path} is empty")
    return text
