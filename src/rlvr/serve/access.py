"""Who may reach rlvr's HTTP servers (`rlvr serve`, `rlvr view`): the bind address,
the Host header, and the content type of a POST.

- A non-loopback bind is the operator exposing the server; `rlvr serve` refuses it
  without a token (`check_bind`), before any socket is bound.
- The Host header must name this server (`allowed_hosts`): loopback names by default,
  plus the bound address and whatever `--allowed-host` adds. A web page on another
  name whose DNS answer is later switched to this machine (DNS rebinding) sends its
  own name as Host, and is refused with 400 (starlette's TrustedHostMiddleware).
- A POST must say `Content-Type: application/json`: a browser sends that cross-site
  only after a CORS preflight, which these servers never grant, while a `text/plain`
  form or no-cors fetch would go out without asking.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Iterable

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1", "[::1]")
_WILDCARD_BINDS = ("0.0.0.0", "::", "")


def is_loopback(host: str) -> bool:
    """True for an address (or the name localhost) that only this machine reaches."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # any other name may resolve anywhere


def check_bind(host: str, authorised: bool, server: str, remedy: str) -> None:
    """ValueError when `host` exposes `server` beyond this machine and `authorised`
    (a token, an explicit flag) does not cover it; `remedy` says what would."""
    if not authorised and not is_loopback(host):
        raise ValueError(
            f"refusing to listen on {host}: {server} would take requests from anyone who "
            f"reaches that address. {remedy}, or bind to 127.0.0.1 and reach it through an "
            "SSH tunnel or a reverse proxy")


def allowed_hosts(bind_host: str, extra: Iterable[str]) -> tuple[str, ...]:
    """The Host header values to accept: loopback names, the bound address (when it is
    one address, not every interface), and `extra` (names clients use; "*" = any)."""
    hosts = list(LOOPBACK_NAMES)
    if bind_host not in _WILDCARD_BINDS:
        hosts.append(f"[{bind_host}]" if ":" in bind_host else bind_host)
    for name in extra:
        name = name.strip().lower()
        if not name:
            raise ValueError("--allowed-host needs a host name (or '*')")
        if "*" in name[1:] or (name.startswith("*") and name != "*"
                               and not name.startswith("*.")):
            raise ValueError(f"--allowed-host {name!r}: a wildcard must be '*' or "
                             "'*.example.com'")
        hosts.append(name)
    return tuple(dict.fromkeys(hosts))


def host_guard(app: Any, hosts: Iterable[str]) -> Any:
    """`app` behind starlette's Host check (400 for any Host not in `hosts`)."""
    from starlette.middleware.trustedhost import TrustedHostMiddleware

    return TrustedHostMiddleware(app, allowed_hosts=list(hosts), www_redirect=False)


def is_json(content_type: str | None) -> bool:
    """Whether a Content-Type header says application/json (parameters allowed)."""
    if not content_type:
        return False
    return content_type.split(";", 1)[0].strip().lower() == "application/json"
