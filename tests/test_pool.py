"""The batch runner: order, hard time limits, crashes, invalid references, reuse."""

from __future__ import annotations

import time

import pytest

from rlvr.verifiers import Case, VerifierPool
from rlvr.verifiers.base import REASON_ERROR, REASON_INVALID, REASON_TIMEOUT

V = "pool_fixtures:Behaving"


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(workers=2, timeout_s=1.0, memory_mb=1024, plugins=[V]).start() as p:
        yield p


def test_results_keep_input_order(pool):
    values = [i / 20 for i in range(21)]
    verdicts = pool.verify([Case(V, str(v), None) for v in values])
    assert [v.score for v in verdicts] == values
    assert [v.passed for v in verdicts] == [v == 1.0 for v in values]


def test_uses_two_processes(pool):
    verdicts = pool.verify([Case(V, "0.5", None) for _ in range(40)])
    assert len({v.details["pid"] for v in verdicts}) == 2


@pytest.mark.parametrize("completion,reason", [
    ("hang", REASON_TIMEOUT), ("sleep", REASON_TIMEOUT), ("exit", REASON_ERROR),
    ("raise", REASON_ERROR), ("memory", REASON_ERROR), ("invalid", REASON_INVALID),
    ("not-a-verdict", REASON_ERROR),
])
def test_bad_items_score_zero_and_batch_finishes(pool, completion, reason):
    start = time.monotonic()
    verdicts = pool.verify([Case(V, "1", None), Case(V, completion, None), Case(V, "0.25", None)])
    assert time.monotonic() - start < 8.0
    assert [v.score for v in verdicts] == [1.0, 0.0, 0.25]
    assert verdicts[1].reason == reason
    assert not verdicts[1].passed


def test_two_hangs_at_once_do_not_stall(pool):
    start = time.monotonic()
    verdicts = pool.verify([Case(V, "hang", None), Case(V, "hang", None)] +
                           [Case(V, "1", None)] * 4)
    assert [v.reason for v in verdicts[:2]] == [REASON_TIMEOUT] * 2
    assert all(v.score == 1.0 for v in verdicts[2:])
    assert time.monotonic() - start < 10.0


def test_case_timeout_overrides_pool_default(pool):
    verdicts = pool.verify([Case(V, "sleep", None, timeout_s=0.2)])
    assert verdicts[0].reason == REASON_TIMEOUT
    assert verdicts[0].details["limit_s"] == 0.2


def test_unknown_verifier_is_invalid_not_fatal(pool):
    verdicts = pool.verify([Case("no-such-verifier", "x", None), Case(V, "1", None)])
    assert verdicts[0].is_invalid and "unknown verifier" in verdicts[0].details["error"]
    assert verdicts[1].score == 1.0


def test_unpicklable_reference_is_an_error_for_that_item(pool):
    verdicts = pool.verify([Case(V, "1", lambda: 0), Case(V, "0.5", None)])
    assert verdicts[0].reason == REASON_ERROR
    assert verdicts[1].score == 0.5


MODULE_LAMBDA = lambda: 0  # noqa: E731 (pickle looks it up by name "<lambda>" and fails)


def test_reference_pickle_refuses_is_an_error_for_that_item(pool):
    verdicts = pool.verify([Case(V, "1", MODULE_LAMBDA), Case(V, "0.5", None)])
    assert verdicts[0].reason == REASON_ERROR and "could not send" in \
        verdicts[0].details["error"]
    assert verdicts[1].score == 0.5


def test_empty_batch(pool):
    assert pool.verify([]) == []


def test_worker_that_cannot_start_raises_clearly(monkeypatch):
    pool = VerifierPool(workers=1, preload=(), plugins=[V])
    monkeypatch.setattr("sys.executable", "/bin/false")
    with pytest.raises(RuntimeError, match="die at start-up"):
        pool.verify([Case(V, "1", None)])


def test_worker_killed_mid_batch_in_rlvr_verify_errors_that_item_alone(tmp_path):
    """End to end: `rlvr verify` grading a batch; one of its worker processes is SIGKILLed
    (as the OOM killer would) while it holds an item. That item gets an error verdict,
    every other item its own, and the batch finishes long before the item's time limit."""
    import json

    import psutil

    from fault_helpers import Cli, wait_until

    marker = tmp_path / "busy.pid"
    completions = ["0.5", "1", "0.25", f"wait:{marker}", "0.75", "1", "0", "0.125"]
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"verifier": "fault_helpers:Marked", "completion": c,
                                         "reference": None}) + "\n" for c in completions))
    out = tmp_path / "verdicts.jsonl"
    start = time.monotonic()
    verify = Cli(tmp_path / "log", "verify", "--input", str(cases), "--output", str(out),
                 "--workers", "2", "--timeout", "120", "--plugin", "fault_helpers:Marked")
    try:
        wait_until(marker.exists, "the item's worker to start it", verify, timeout=60)
        pid = int(marker.read_text())
        workers = {p.pid for p in psutil.Process(verify.pid).children(recursive=True)}
        assert pid in workers  # a worker of this `rlvr verify`, not some other process
        psutil.Process(pid).kill()
        assert verify.wait(timeout=60) == 0, verify.stderr()[-2000:]
    finally:
        verify.stop()
    assert time.monotonic() - start < 100  # the death was seen, not the 120 s limit
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert lines[3] == {"score": 0.0, "passed": False, "reason": REASON_ERROR,
                        "details": {"error": "verifier process died (exit code -9)"}}
    others = [line for i, line in enumerate(lines) if i != 3]
    assert [line["score"] for line in others] == [float(c) for i, c in enumerate(completions)
                                                  if i != 3]
    assert {line["reason"] for line in others} == {"ok"}
