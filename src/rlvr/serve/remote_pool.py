"""`reward.backend: remote`: the trainer's verifier pool, graded by `rlvr serve` servers.

`RemoteVerifierPool` presents the `BatchVerifier` interface the process and Ray pools
do (`verify(cases) -> verdicts` in order, `close`, a context manager, `restarts`), so
the trainer and evaluator do not know where grading runs. Each case travels as its
`rlvr verify` line and each verdict comes back as its line (rlvr.verifiers.contract),
so the verdicts are the ones a local pool gives. A server that cannot be reached is a
ServeError naming its URL, never a silent 0.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from rlvr.serve.client import ServeClient
from rlvr.verifiers.base import Verdict
from rlvr.verifiers.contract import case_record, verdict_from_line
from rlvr.verifiers.pool import Case


class RemoteVerifierPool:
    """urls: the servers; token: their shared token (None: $RLVR_SERVE_TOKEN);
    timeout_s: a per-item limit sent with every case (None: the server's)."""

    def __init__(self, urls: Sequence[str], token: str | None = None,
                 timeout_s: float | None = None, batch_size: int = 256,
                 concurrency: int = 8) -> None:
        self.client = ServeClient(urls, token=token, batch_size=batch_size,
                                  concurrency=concurrency)
        self.timeout_s = timeout_s
        self.restarts = 0  # the servers replace their own workers; nothing to count here

    def __enter__(self) -> "RemoteVerifierPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> "RemoteVerifierPool":
        """Check that every server answers and takes the token (ServeError if not)."""
        self.client.check()
        return self

    def verify(self, cases: Sequence[Case]) -> list[Verdict]:
        """Verdicts for `cases`, in order. A case that cannot be sent as JSON scores
        "error" alone; an unreachable server raises ServeError."""
        records: list[dict[str, Any]] = []
        sendable: list[int] = []
        results: list[Verdict | None] = [None] * len(cases)
        for index, case in enumerate(cases):
            if self.timeout_s is not None and case.timeout_s is None:
                case = Case(case.verifier, case.completion, case.reference, case.options,
                            self.timeout_s, case.prompt)
            record = case_record(case)
            try:
                json.dumps(record)
            except (TypeError, ValueError) as exc:
                results[index] = Verdict.error(f"could not send item: {exc}")
                continue
            records.append(record)
            sendable.append(index)
        for index, line in zip(sendable, self.client.verify(records)):
            results[index] = verdict_from_line(line)
        return [r if r is not None else Verdict.error("lost") for r in results]

    def close(self) -> None:
        self.client.close()
