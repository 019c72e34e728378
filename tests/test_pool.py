"""The batch runner: order, hard time limits, crashes, invalid references, reuse."""

from __future__ import annotations

import time

import pytest

from rlvr.verifiers import Case, VerifierPool
from rlvr.verifiers.base import REASON_ERROR, REASON_INVALID, REASON_TIMEOUT

V = "pool_fixtures:Behaving"


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(workers=2, timeout_s=1.0, memory_mb=1024).start() as p:
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
    pool = VerifierPool(workers=1, preload=())
    monkeypatch.setattr("sys.executable", "/bin/false")
    with pytest.raises(RuntimeError, match="die at start-up"):
        pool.verify([Case(V, "1", None)])
