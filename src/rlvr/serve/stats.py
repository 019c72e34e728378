"""Counters and latency percentiles for `GET /metrics` (JSON, or Prometheus text with
`?format=prometheus`). Latencies are a window of the most recent requests, so the
percentiles describe the server now, in bounded memory."""

from __future__ import annotations

import threading
import time
from collections import Counter, deque
from typing import Any

WINDOW = 10_000


class Stats:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.started = time.time()
        self.requests: Counter[int] = Counter()  # by HTTP status
        self.verdicts = 0  # verdict lines returned
        self.deadline_items = 0  # items answered with the deadline error
        self._latency_ms: deque[float] = deque(maxlen=WINDOW)

    def record(self, status: int, seconds: float, verdicts: int = 0,
               deadline_items: int = 0) -> None:
        with self._lock:
            self.requests[status] += 1
            self.verdicts += verdicts
            self.deadline_items += deadline_items
            if status == 200:
                self._latency_ms.append(seconds * 1000.0)

    def snapshot(self, load: dict[str, int]) -> dict[str, Any]:
        with self._lock:
            latencies = sorted(self._latency_ms)
            requests = {str(k): v for k, v in sorted(self.requests.items())}
            verdicts, deadline_items = self.verdicts, self.deadline_items
        return {"uptime_s": round(time.time() - self.started, 3),
                "requests": requests, "verdicts": verdicts, "deadline_items": deadline_items,
                "queue": load,
                "latency_ms": {name: percentile(latencies, q) for name, q in
                               (("p50", 0.50), ("p90", 0.90), ("p99", 0.99), ("max", 1.0))},
                "latency_window": len(latencies)}


def percentile(sorted_values: list[float], q: float) -> float | None:
    """The nearest-rank q-quantile of already sorted values (None when empty)."""
    if not sorted_values:
        return None
    rank = max(1, min(len(sorted_values), int(-(-q * len(sorted_values) // 1))))
    return round(sorted_values[rank - 1], 3)


def prometheus_text(snapshot: dict[str, Any]) -> str:
    """The snapshot in Prometheus' text exposition format."""
    lines = ["# TYPE rlvr_serve_requests_total counter"]
    for status, count in snapshot["requests"].items():
        lines.append(f'rlvr_serve_requests_total{{status="{status}"}} {count}')
    lines += ["# TYPE rlvr_serve_verdicts_total counter",
              f"rlvr_serve_verdicts_total {snapshot['verdicts']}",
              "# TYPE rlvr_serve_deadline_items_total counter",
              f"rlvr_serve_deadline_items_total {snapshot['deadline_items']}"]
    for name, value in snapshot["queue"].items():
        kind = "counter" if name == "restarts" else "gauge"
        lines += [f"# TYPE rlvr_serve_{name} {kind}", f"rlvr_serve_{name} {value}"]
    lines.append("# TYPE rlvr_serve_latency_ms gauge")
    for name, value in snapshot["latency_ms"].items():
        if value is not None:
            quantile = {"p50": "0.5", "p90": "0.9", "p99": "0.99", "max": "1"}[name]
            lines.append(f'rlvr_serve_latency_ms{{quantile="{quantile}"}} {value}')
    return "\n".join(lines) + "\n"
