"""The settings of one `rlvr serve` process, declared once (the CLI fills them)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Mapping

TOKEN_ENV = "RLVR_SERVE_TOKEN"


@dataclass(frozen=True)
class ServeSettings:
    """workers:        verifier worker processes (each grades one item at a time).
    timeout_s:      per-item limit; None = each verifier's own (5 s for math).
    memory_mb:      address-space limit per worker (a memory bomb scores "error").
    preload:        verifier names every worker imports at start.
    max_items:      items admitted and not yet graded, over all requests; a request
                    that would pass it gets 429 + Retry-After (the memory bound).
    max_body_mb:    the largest request body read (413 beyond).
    deadline_s:     a request's wall-clock limit (a request may ask for less); items
                    not graded by then get an error verdict.
    token:          shared secret: every request but /health needs
                    `Authorization: Bearer <token>` ("" = no auth).
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

    def __post_init__(self) -> None:
        checks = {"workers": self.workers >= 1, "max_items": self.max_items >= 1,
                  "max_body_mb": self.max_body_mb > 0, "deadline_s": self.deadline_s > 0,
                  "timeout_s": self.timeout_s is None or self.timeout_s > 0}
        bad = [name for name, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"serve setting {bad[0]} must be positive")


def token_from_env(given: str | None) -> str:
    """The auth token: the one given, else $RLVR_SERVE_TOKEN, else "" (no auth)."""
    return given if given is not None else os.environ.get(TOKEN_ENV, "")
