"""What a request may choose, over real HTTP against `rlvr serve` on 127.0.0.1: a request
names a verifier and sets grading options; code, sandboxes, files, endpoints and
secrets are the operator's. Each attack below is a 400 naming the item and field, and
nothing is executed (marker files), written (the cache directory), or sent (a local
listener gets no connection; a canary environment variable of the server appears in no
answer). A request's per-item limit is capped by the server's.

Self-contained: its own server launcher, token and JSON content type, so it does not
depend on how other tests start the server."""

from __future__ import annotations

import http.server
import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import httpx
import pytest

SRC = str(Path(__file__).resolve().parents[1] / "src")
TESTS = str(Path(__file__).resolve().parent)
TOKEN = "request-choice-test-token"
CANARY_VAR = "RLVR_TEST_CANARY_SECRET"
CANARY = f"canary-{uuid.uuid4().hex}"
SLOW = "serve_helpers:SlowVerifier"  # sleeps its reference's seconds, then passes
SERVER_LIMIT_S = 2.0


class _Serve:
    """`rlvr serve` in a subprocess on a free loopback port, with the canary in its env."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, TESTS]),
               "RLVR_SERVE_TOKEN": TOKEN, CANARY_VAR: CANARY}
        self.process = subprocess.Popen([sys.executable, "-m", "rlvr", "serve", "--port", "0",
                                         *args], stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, text=True, env=env)
        line = self.process.stdout.readline()  # printed once the workers are ready
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        if not match:
            self.process.kill()
            raise RuntimeError(f"rlvr serve did not start: {line!r} "
                               f"{self.process.stderr.read()[-2000:]}")
        self.url = f"http://127.0.0.1:{match.group(1)}"
        self.answers: list[str] = []  # every answer body, searched for the canary

    def post(self, path: str, body: object, timeout: float = 60.0) -> httpx.Response:
        response = httpx.post(self.url + path, content=json.dumps(body), timeout=timeout,
                              headers={"Authorization": f"Bearer {TOKEN}",
                                       "Content-Type": "application/json"})
        self.answers.append(response.text)
        return response

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def server():
    srv = _Serve("--workers", "1", "--timeout", str(SERVER_LIMIT_S), "--preload", "exact",
                 "--plugin", SLOW)
    yield srv
    srv.stop()
    assert not any(CANARY in answer for answer in srv.answers)


@pytest.fixture
def listener():
    """A socket on 127.0.0.1 that no request may make the server connect to."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    yield sock
    sock.close()


def _connected(sock: socket.socket, wait_s: float = 1.0) -> bool:
    readable, _, _ = select.select([sock], [], [], wait_s)
    return bool(readable)


def _refused(response: httpx.Response, field: str, *words: str) -> None:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["field"] == field, body
    for word in words:
        assert word in body["error"], body


def _item(verifier: str, options: dict | None = None, reference: object = "1",
          completion: str = "#### 1") -> dict:
    item = {"verifier": verifier, "completion": completion, "reference": reference}
    if options is not None:
        item["options"] = options
    return item


def _settle(server: _Serve) -> None:
    """An ordinary item graded after the attack: had the attack been queued, the one
    worker would have run it first."""
    response = server.post("/verify", {"items": [_item("exact")]})
    assert response.json()["verdicts"][0]["passed"] is True


def test_an_import_path_item_is_refused_and_runs_nothing(server, tmp_path):
    marker = tmp_path / "pwned"
    attack = _item("os:system", {"command": f"touch {marker}"}, "", "")
    response = server.post("/verify", {"items": [_item("exact"), attack]})
    _refused(response, "items[1].verifier", "'os:system' is an import path")
    one = server.post("/verify/one", attack)
    _refused(one, "verifier", "'os:system' is an import path")
    strict = server.post("/verify", {"items": [attack], "strict": False, "source": "f.jsonl"})
    _refused(strict, "items[0].verifier", "f.jsonl:1: field 'verifier'")
    _settle(server)
    assert not marker.exists()


def test_a_request_cannot_turn_the_sandbox_off(server, tmp_path):
    marker = tmp_path / "written-on-the-host"
    program = f"open({str(marker)!r}, 'w').write('x')\ndef f():\n    return 1\n"
    attack = _item("code", {"sandbox": "none-unsafe"}, {"asserts": ["assert f() == 1"]},
                   program)
    _refused(server.post("/verify", {"items": [attack]}), "items[0].options.sandbox",
             "option 'sandbox' of verifier 'code' is set by the operator only")
    memory = _item("code", {"memory_mb": 2048}, {"asserts": ["assert f() == 1"]}, program)
    _refused(server.post("/verify", {"items": [memory]}), "items[0].options.memory_mb")
    _settle(server)
    assert not marker.exists()


@pytest.mark.parametrize("option", ["base_url", "api_key_env", "model"])
def test_judge_endpoint_key_and_model_are_refused_and_nothing_is_sent(server, listener,
                                                                      option):
    port = listener.getsockname()[1]
    chosen = {"base_url": f"http://127.0.0.1:{port}/v1", "api_key_env": CANARY_VAR,
              "model": "attacker-model"}
    response = server.post("/verify", {"items": [
        _item("judge", {option: chosen[option]}, "the answer is 1", "1")]})
    _refused(response, f"items[0].options.{option}", f"option {option!r} of verifier 'judge'")
    both = server.post("/verify/one", _item("judge", chosen, "the answer is 1", "1"))
    assert both.status_code == 400
    assert not _connected(listener)
    assert CANARY not in response.text + both.text


def test_the_refusal_does_not_tell_whether_a_variable_is_set(server):
    """The old error said whether the named variable was set: an oracle for the
    server's environment. The refusal reads the same for a set and an unset name."""
    answers = []
    for name in (CANARY_VAR, "RLVR_TEST_SURELY_UNSET_VAR"):
        response = server.post("/verify", {"items": [
            _item("judge", {"api_key_env": name}, "ref", "x")]})
        answers.append(response.json()["error"].replace(name, "NAME"))
    assert answers[0] == answers[1]


def test_a_cache_dir_from_a_request_is_refused_and_nothing_is_created(server, tmp_path):
    cache = tmp_path / "attacker-cache"
    response = server.post("/verify", {"items": [
        _item("judge", {"cache_dir": str(cache)}, "the answer is 1", "1")]})
    _refused(response, "items[0].options.cache_dir", "set by the operator only")
    _settle(server)
    assert not cache.exists()


def test_composite_components_cannot_name_code_or_operator_options(server, tmp_path, listener):
    marker = tmp_path / "pwned"
    code = _item("composite", {"components": [
        {"verifier": "exact"},
        {"verifier": "os:system", "options": {"command": f"touch {marker}"}}]})
    _refused(server.post("/verify", {"items": [code]}),
             "items[0].options.components[1].verifier", "import path")
    judge = _item("composite", {"components": [
        {"verifier": "judge", "options": {
            "base_url": f"http://127.0.0.1:{listener.getsockname()[1]}/v1"}}]})
    _refused(server.post("/verify", {"items": [judge]}),
             "items[0].options.components[0].options.base_url")
    nested = _item("composite", {"components": [{"verifier": "composite", "options": {
        "components": [{"verifier": "code", "options": {"sandbox": "none-unsafe"}}]}}]})
    _refused(server.post("/verify", {"items": [nested]}),
             "items[0].options.components[0].options.components[0].options.sandbox")
    r1 = _item("r1_math", {"format_options": {"answer_tag": "answer", "cache_dir": "/tmp/x"}})
    _refused(server.post("/verify", {"items": [r1]}),
             "items[0].options.format_options.cache_dir")
    _settle(server)
    assert not marker.exists() and not _connected(listener)


def test_grading_options_and_operator_plugins_are_accepted(server):
    items = [_item("exact", {"case_sensitive": True}, "Yes", "#### yes"),
             _item("exact", {"case_sensitive": False}, "Yes", "#### yes"),
             _item("math", {"answer_form": "value"}, "2", "\\boxed{2}"),
             _item("composite", {"components": [{"verifier": "exact", "weight": 1.0}]}),
             _item(SLOW, None, 0, "")]
    response = server.post("/verify", {"items": items})
    assert response.status_code == 200, response.text
    verdicts = response.json()["verdicts"]
    assert [v["passed"] for v in verdicts] == [False, True, True, True, True]
    assert verdicts[4]["details"] == {"seconds": 0.0}  # the plugin ran, in the worker


def test_an_item_time_limit_is_capped_by_the_servers(server):
    start = time.monotonic()
    response = server.post("/verify", {"items": [
        _item(SLOW, None, 30, "") | {"timeout_s": 1000},
        _item(SLOW, None, 30, "") | {"timeout_s": 0.5}]})
    elapsed = time.monotonic() - start
    verdicts = response.json()["verdicts"]
    # uncapped, the first item would sleep its 30 s and pass
    assert verdicts[0] == {"score": 0.0, "passed": False, "reason": "timeout",
                           "details": {"limit_s": SERVER_LIMIT_S}}
    assert verdicts[1]["details"] == {"limit_s": 0.5}  # a shorter limit is kept
    assert elapsed < 20


class _JudgeEndpoint(http.server.BaseHTTPRequestHandler):
    seen: list[dict] = []

    def do_POST(self):  # noqa: N802 (http.server's name)
        length = int(self.headers.get("Content-Length", 0))
        _JudgeEndpoint.seen.append({"auth": self.headers.get("Authorization"),
                                    "body": self.rfile.read(length)})
        self.send_response(500)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_the_operator_sets_the_judge_endpoint_and_a_request_uses_it(tmp_path):
    """The judge stays usable through serve: the operator's --verifier-options choose
    the endpoint and key variable; a request naming "judge" with no options reaches that
    endpoint, with the key the operator chose, and the key is in no answer."""
    endpoint = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _JudgeEndpoint)
    threading.Thread(target=endpoint.serve_forever, daemon=True).start()
    options = {"base_url": f"http://127.0.0.1:{endpoint.server_address[1]}/v1",
               "model": "operator-model", "api_key_env": CANARY_VAR, "retries": 0,
               "total_timeout_s": 10}
    srv = _Serve("--workers", "1", "--preload", "", "--verifier-options",
                 f"judge={json.dumps(options)}")
    try:
        response = srv.post("/verify", {"items": [_item("judge", None, "the answer is 1", "1")]})
        assert response.status_code == 200, response.text
        verdict = response.json()["verdicts"][0]
        assert verdict["score"] == 0.0  # the endpoint answered 500
        assert _JudgeEndpoint.seen and _JudgeEndpoint.seen[0]["auth"] == f"Bearer {CANARY}"
        assert json.loads(_JudgeEndpoint.seen[0]["body"])["model"] == "operator-model"
        assert CANARY not in response.text
    finally:
        srv.stop()
        endpoint.shutdown()
