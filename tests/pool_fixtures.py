"""Verifiers that misbehave on purpose, named by import path in the pool tests
(worker processes import them by that path)."""

from __future__ import annotations

import os
import time
from typing import Any

from rlvr.verifiers.base import InvalidReference, Verdict


class Behaving:
    """score = float(completion) so a test can see that results keep their order."""

    name = "behaving"

    def check_reference(self, reference: Any) -> None:
        pass

    def verify(self, completion: str, reference: Any) -> Verdict:
        if completion == "hang":
            while True:  # a busy loop no signal handler in Python code would interrupt
                pass
        if completion == "sleep":
            time.sleep(3600)
        if completion == "exit":
            os._exit(3)
        if completion == "raise":
            raise RuntimeError("boom")
        if completion == "memory":
            blob = bytearray(64 * 1024**3)  # far above the worker's address-space limit
            return Verdict.correct(size=len(blob))
        if completion == "invalid":
            raise InvalidReference("reference lacks field 'x'")
        if completion == "not-a-verdict":
            return 1.0  # type: ignore[return-value]
        return Verdict(float(completion), float(completion) == 1.0, "ok", {"pid": os.getpid()})
