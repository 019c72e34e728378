"""Helpers for tests/test_adapters_verl_real.py, importable in verifier worker processes
(kept apart from the test module so workers do not import verl)."""

from __future__ import annotations

import json
import os
import time
import uuid


class TimedMath:
    """rlvr's math verifier, wrapped: waits `delay_s`, grades, and writes the wall-clock
    start and end of the call to a file in `log_dir` (loaded as
    "verl_helpers:TimedMath" in the pool's worker processes), so a test can tell
    whether items were graded at the same time."""

    name = "timed_math"
    uses_prompt = True

    def __init__(self, log_dir: str, delay_s: float = 0.0) -> None:
        from rlvr.verifiers.registry import get_verifier

        self.log_dir = log_dir
        self.delay_s = float(delay_s)
        self.math = get_verifier("math")

    def check_reference(self, reference):
        return self.math.check_reference(reference)

    def verify(self, completion, reference, prompt=None):
        from rlvr.verifiers.base import run_verifier

        start = time.time()
        time.sleep(self.delay_s)
        verdict = run_verifier(self.math, completion, reference, prompt=prompt)
        end = time.time()
        record = {"start": start, "end": end, "pid": os.getpid(), "completion": completion}
        path = os.path.join(self.log_dir, f"{uuid.uuid4().hex}.json")
        with open(path, "w") as handle:
            json.dump(record, handle)
        return verdict
