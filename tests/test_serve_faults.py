"""`rlvr serve` under pressure and failure: 429 + Retry-After past the queue bound, the
client waiting it out, deadlines, a server killed mid-request, failover between servers.
The slow verifier (serve_helpers:SlowVerifier) sleeps its reference's seconds."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from rlvr.serve.client import ServeClient, ServeError
from serve_helpers import Server

QUICK = {"verifier": "exact", "completion": "#### 7", "reference": "7"}


def slow(seconds: float) -> dict:
    return {"verifier": "serve_helpers:SlowVerifier", "completion": "", "reference": seconds}


def _metrics(server: Server) -> dict:
    return httpx.get(server.url + "/metrics").json()


def _wait_for(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def tiny_queue():
    """One worker, room for 2 admitted items."""
    srv = Server("--workers", "1", "--max-items", "2", "--preload", "exact",
                 "--plugin", "serve_helpers:SlowVerifier")
    yield srv
    assert srv.stop() == 0


def _in_background(fn):
    box: dict = {}
    thread = threading.Thread(target=lambda: box.setdefault("value", fn()))
    thread.start()
    return thread, box


def test_full_queue_answers_429_with_retry_after_and_the_client_waits(tiny_queue):
    first, box = _in_background(lambda: tiny_queue.post("/verify", {"items": [slow(1.0),
                                                                              slow(1.0)]}))
    _wait_for(lambda: _metrics(tiny_queue)["queue"]["admitted"] == 2)
    refused = tiny_queue.post("/verify", {"items": [QUICK]})
    assert refused.status_code == 429
    assert 1 <= int(refused.headers["retry-after"]) <= 30
    too_big = tiny_queue.post("/verify", {"items": [QUICK] * 3})
    assert too_big.status_code == 413  # never admissible: split it, do not retry
    with ServeClient(tiny_queue.url) as client:  # retries on 429 until there is room
        lines = client.verify([QUICK])
    first.join()
    assert lines[0]["passed"] is True
    assert [v["reason"] for v in box["value"].json()["verdicts"]] == ["slept", "slept"]
    assert _metrics(tiny_queue)["requests"]["429"] >= 2


def test_deadline_gives_error_verdicts_and_the_server_stays_healthy(tiny_queue):
    start = time.monotonic()
    answer = tiny_queue.post("/verify", {"items": [slow(1.5), slow(1.5)], "deadline_s": 0.5})
    assert answer.status_code == 200 and time.monotonic() - start < 1.4
    verdicts = answer.json()["verdicts"]
    assert [(v["score"], v["reason"]) for v in verdicts] == [(0.0, "error")] * 2
    assert all("deadline" in v["details"]["error"] for v in verdicts)
    assert httpx.get(tiny_queue.url + "/health").json()["status"] == "ok"
    # the item in progress finishes, the abandoned one is skipped: the queue empties
    _wait_for(lambda: _metrics(tiny_queue)["queue"]["admitted"] == 0)
    again = tiny_queue.post("/verify", {"items": [QUICK]})
    assert again.json()["verdicts"][0]["passed"] is True
    assert _metrics(tiny_queue)["deadline_items"] >= 2


def test_a_server_killed_mid_request_is_an_error_naming_its_url():
    server = Server("--workers", "1", "--preload", "exact", "--plugin", "serve_helpers:SlowVerifier")
    client = ServeClient(server.url)
    try:
        waiting, box = _in_background(lambda: _raised(lambda: client.verify([slow(5.0)])))
        _wait_for(lambda: _metrics(server)["queue"]["busy"] == 1)
        server.kill()
        waiting.join(timeout=30)
        error = box["value"]
        assert isinstance(error, ServeError) and server.url in str(error)
        assert "mid-request" in str(error)
        with pytest.raises(ServeError, match=server.url):  # still set aside: named at once
            client.verify([QUICK])
    finally:
        client.close()
        server.kill()


def _raised(fn):
    try:
        fn()
    except Exception as exc:  # the test inspects it
        return exc
    return None


def test_batches_fail_over_to_the_live_server(tiny_queue):
    dead = "http://127.0.0.1:9"  # the discard port: nothing listens there
    items = [{"verifier": "exact", "completion": f"#### {i}", "reference": str(i % 3)}
             for i in range(12)]
    with ServeClient([dead, tiny_queue.url], batch_size=2, concurrency=1) as client:
        lines = client.verify(items)
    assert [line["passed"] for line in lines] == [i % 3 == i for i in range(12)]
    with ServeClient([dead]) as client, pytest.raises(ServeError, match="127.0.0.1:9"):
        client.check()
