"""A stand-in for a remote verifier (a grading service, an LLM judge behind an API):
the math verifier's verdict, returned after a fixed wait per item. It is a *stand-in*:
the wait is time.sleep, so it takes no CPU, as a network round trip takes none here;
it measures what overlapping verification with the update is worth when verification
is slow, not any real service. benchmarks/systems/bench_async.py's `remote-verifier`
workload names it as the run's reward plugin:

    reward.plugins=[benchmarks.systems.remote_verifier:RemoteVerifierStandIn]
    reward.verifier=benchmarks.systems.remote_verifier:RemoteVerifierStandIn
    reward.options={latency_s: 0.25}
"""

from __future__ import annotations

import time
from typing import Any

from rlvr.verifiers.base import Verdict, run_verifier
from rlvr.verifiers.registry import get_verifier


class RemoteVerifierStandIn:
    """math's verdict after `latency_s` seconds (per item; other options go to math)."""

    name = "remote-verifier-stand-in"
    uses_prompt = True  # math rejects an answer that only restates the question
    default_timeout_s = 30.0

    def __init__(self, latency_s: float = 0.25, **math_options: Any) -> None:
        if not latency_s >= 0:
            raise ValueError(f"latency_s must be >= 0 seconds, got {latency_s!r}")
        self.latency_s = float(latency_s)
        self.math = get_verifier("math", **math_options)

    def check_reference(self, reference: Any) -> None:
        self.math.check_reference(reference)

    def verify(self, completion: str, reference: Any, prompt: str | None = None) -> Verdict:
        time.sleep(self.latency_s)
        return run_verifier(self.math, completion, reference, prompt)
