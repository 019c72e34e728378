"""The operator's command-line choices of code and server-side options, shared by
`rlvr serve` and `rlvr verify`: --plugin MODULE:CLASS and --verifier-options NAME=JSON.
Cases from data or requests then pick only among these (rlvr.verifiers.untrusted)."""

from __future__ import annotations

import argparse
from typing import Any

from rlvr.verifiers.untrusted import OperatorPolicy


def add_operator_arguments(p: Any) -> None:
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE:CLASS",
                   help="a verifier of your own that cases may name by this same "
                   "MODULE:CLASS string (repeatable); no other import path is accepted")
    p.add_argument("--verifier-options", action="append", default=[], metavar="NAME=JSON",
                   help="options you set for verifier NAME, e.g. judge='{\"base_url\": "
                   "\"http://judge:8000/v1\", \"model\": \"m\"}' (repeatable); a case may "
                   "set only a verifier's grading options")


def operator_policy(args: argparse.Namespace, timeout_cap_s: float | None) -> OperatorPolicy:
    """Install the plugins (imported now) and build the policy cases are admitted
    under; ValueError naming the flag and entry for a bad one."""
    from rlvr.verifiers.registry import add_plugins
    from rlvr.verifiers.untrusted import parse_verifier_options

    add_plugins(args.plugin, "--plugin")  # before the options, which may name them
    return OperatorPolicy(parse_verifier_options(args.verifier_options), timeout_cap_s)
