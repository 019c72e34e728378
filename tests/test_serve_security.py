"""`rlvr serve` and `rlvr view` attacked over their transport, over real HTTP on
127.0.0.1: cross-site POSTs, empty and leaked tokens, DNS rebinding (Host), oversized
item counts, slow clients, unparseable JSON, text that UTF-8 cannot carry, and an
exposed bind without a token (inside a private network namespace). Then what a request
may choose: a request names a verifier and sets grading options; code, sandboxes, files,
endpoints and secrets are the operator's. Each such attack is a 400 naming the item and
field, and nothing is executed (marker files), written (a cache directory) or sent (a
local listener gets no connection; a canary environment variable of the server appears
in no answer); a request's per-item limit is capped by the server's.

"Nothing executed" is checked with a marker file: the request names a verifier that
would create it (`os:system`), so a request that got through would leave it behind.
"""

from __future__ import annotations

import http.server
import json
import os
import resource
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from cli_helpers import SRC
from serve_helpers import TESTS, Server
from serve_security_helpers import (CANARY, CANARY_VAR, SERVER_LIMIT_S, SLOW, _connected, _in_private_netns,
                                     _item, _JudgeEndpoint, _port, _read_until_closed, _refused, _require_netns,
                                     _Serve, _settle, _unread_answer)
from rlvr.verifiers.contract import verdict_from_line

HEADER_TIMEOUT_S = 1.0
BODY_TIMEOUT_S = 1.5
TOKEN = "file-token-5b1d"
QUICK = {"verifier": "exact", "completion": "1", "reference": "1"}


def _marker_case(marker: Path) -> dict:
    return {"verifier": "os:system", "options": {"command": f"touch {marker}"},
            "completion": "", "reference": ""}


@pytest.fixture(scope="module")
def open_server():
    """No token (loopback), small limits so every cut-off shows within seconds."""
    srv = Server("--workers", "1", "--preload", "exact", "--max-items", "4",
                 "--max-body-mb", "1", "--header-timeout", str(HEADER_TIMEOUT_S),
                 "--body-timeout", str(BODY_TIMEOUT_S))
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def file_token_server(tmp_path_factory):
    path = tmp_path_factory.mktemp("token") / "token"
    path.write_text(TOKEN + "\n")  # a trailing newline, as `echo > file` writes it
    srv = Server("--workers", "1", "--preload", "exact", "--token-file", str(path),
                 "--allowed-host", "grader.test")
    srv.token = TOKEN
    yield srv
    srv.stop()


def _post(server: Server, body: bytes | str, headers: dict | None = None, **kw) -> httpx.Response:
    return httpx.post(server.url + "/verify", content=body, timeout=30,
                      headers={**server.headers(), **(headers or {})}, **kw)


def _alive(server: Server) -> bool:
    return httpx.get(server.url + "/health", timeout=10).status_code == 200


# ---- cross-site POSTs ---------------------------------------------------------------

@pytest.mark.parametrize("content_type", [None, "text/plain", "text/plain;charset=UTF-8",
                                          "application/x-www-form-urlencoded",
                                          "multipart/form-data; boundary=x"])
def test_a_post_that_a_page_may_send_cross_site_is_refused_and_runs_nothing(
        open_server, tmp_path, content_type):
    marker = tmp_path / "ran"
    body = json.dumps({"items": [_marker_case(marker)]})
    headers = {"Content-Type": content_type} if content_type else {}
    answer = httpx.post(open_server.url + "/verify", content=body, headers=headers, timeout=30)
    assert answer.status_code == 415 and "application/json" in answer.json()["error"]
    one = httpx.post(open_server.url + "/verify/one", content=json.dumps(_marker_case(marker)),
                     headers=headers, timeout=30)
    assert one.status_code == 415
    assert not marker.exists()
    # the same endpoint takes a JSON body declared as such
    good = _post(open_server, json.dumps({"items": [QUICK]}),
                 {"Content-Type": "application/json; charset=utf-8"})
    assert good.status_code == 200 and good.json()["verdicts"][0]["score"] == 1.0


# ---- tokens ---------------------------------------------------------------------------

def _start_fails(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items()
            if k not in ("RLVR_SERVE_TOKEN", "RLVR_SERVE_TOKEN_FILE")}
    full.update(env, PYTHONPATH=os.pathsep.join([SRC, TESTS]))
    return subprocess.run([sys.executable, "-m", "rlvr", "serve", "--port", "0",
                           "--workers", "1", *args], capture_output=True, text=True,
                          env=full, timeout=120)


def test_an_empty_token_is_refused_at_start_never_taken_as_no_auth(tmp_path):
    empty, blank = tmp_path / "empty", tmp_path / "blank"
    empty.write_text("")
    blank.write_text(" \n")
    attempts = [(["--token", ""], {}),
                (["--token", ""], {"RLVR_SERVE_TOKEN": "set-in-env"}),  # no silent override
                ([], {"RLVR_SERVE_TOKEN": ""}),
                (["--token-file", str(empty)], {}),
                (["--token-file", str(blank)], {}),
                ([], {"RLVR_SERVE_TOKEN_FILE": str(empty)}),
                (["--token-file", str(tmp_path / "missing")], {})]
    for args, env in attempts:
        done = _start_fails(args, env)
        assert done.returncode == 2, (args, env, done.stdout, done.stderr)
        assert "http://" not in done.stdout  # it never served
        assert "empty" in done.stderr or "cannot read" in done.stderr, done.stderr


def test_a_token_from_a_file_guards_every_request_but_health(file_token_server):
    case = json.dumps({"items": [QUICK]})
    json_only = {"Content-Type": "application/json"}
    for auth in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN},
                 {"Authorization": f"Bearer {TOKEN[:-1]}"}):
        answer = httpx.post(file_token_server.url + "/verify", content=case,
                            headers={**json_only, **auth}, timeout=30)
        assert answer.status_code == 401
    assert _post(file_token_server, case).json()["verdicts"][0]["score"] == 1.0
    assert _alive(file_token_server)


def test_a_token_from_the_environment_works():
    srv = Server("--workers", "1", "--preload", "exact", token="env-token-77")
    try:
        assert _post(srv, json.dumps({"items": [QUICK]})).status_code == 200
        assert _post(srv, json.dumps({"items": [QUICK]}),
                     {"Authorization": "Bearer nope"}).status_code == 401
    finally:
        srv.stop()
    assert "warning" not in srv.process.stderr.read()


def test_a_token_in_argv_works_on_loopback_with_a_warning():
    srv = Server("--workers", "1", "--preload", "exact", "--token", "argv-token-3")
    srv.token = "argv-token-3"
    try:
        assert _post(srv, json.dumps({"items": [QUICK]})).status_code == 200
        srv.token = ""
        assert _post(srv, json.dumps({"items": [QUICK]})).status_code == 401
    finally:
        srv.stop()
    stderr = srv.process.stderr.read()
    assert "warning" in stderr and "/proc/PID/cmdline" in stderr, stderr


def test_the_body_is_not_read_before_the_token_is_checked(file_token_server):
    """A head announcing 10 MB and no token gets its 401 at once, without the body."""
    port = int(file_token_server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     b"application/json\r\nContent-Length: 10000000\r\n\r\n")
        start = time.monotonic()
        head = sock.recv(4096)
    assert head.startswith(b"HTTP/1.1 401") and time.monotonic() - start < 5


# ---- Host header (DNS rebinding) ------------------------------------------------------

def test_a_host_header_of_another_name_is_refused(open_server, tmp_path):
    marker = tmp_path / "ran"
    port = open_server.url.rsplit(":", 1)[1]
    body = json.dumps({"items": [_marker_case(marker)]})
    for host in ("evil.example", f"evil.example:{port}", f"127.0.0.1.evil.example:{port}"):
        answer = _post(open_server, body, {"Host": host})
        assert answer.status_code == 400, host
        assert httpx.get(open_server.url + "/health", headers={"Host": host}).status_code == 400
    assert not marker.exists()
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost"):
        answer = _post(open_server, json.dumps({"items": [QUICK]}), {"Host": host})
        assert answer.status_code == 200, host


def test_allowed_host_adds_a_name(file_token_server):
    ok = _post(file_token_server, json.dumps({"items": [QUICK]}), {"Host": "grader.test:80"})
    assert ok.status_code == 200
    other = _post(file_token_server, json.dumps({"items": [QUICK]}), {"Host": "grader.test.evil"})
    assert other.status_code == 400


def test_rlvr_view_checks_the_host_header_too(tmp_path):
    pytest.importorskip("starlette", reason="rlvr view needs starlette (rlvr[view])")
    from audit_fixtures import write_run
    from view_helpers import served

    run = write_run(tmp_path / "run", hacked=False)
    with served(run, extra=("--allowed-host", "viewer.test")) as url:
        port = url.rstrip("/").rsplit(":", 1)[1]
        for host, status in ((f"evil.example:{port}", 400), ("viewer.test", 200),
                             (f"127.0.0.1:{port}", 200)):
            for path in ("", "api/runs", "api/runs/0/search?q=What"):
                got = httpx.get(url + path, headers={"Host": host}, timeout=30).status_code
                assert got == status, (host, path)


# ---- bounded work per request ---------------------------------------------------------

def test_max_items_counts_every_item_case_or_not(open_server):
    too_many = _post(open_server, json.dumps({"items": [0] * 5}))
    assert too_many.status_code == 413 and "at most 4" in too_many.json()["error"]
    mixed = _post(open_server, json.dumps({"items": [QUICK, QUICK, 7, "x", None]}))
    assert mixed.status_code == 413
    at_limit = _post(open_server, json.dumps({"items": [0, "x", QUICK, []]}))
    assert at_limit.status_code == 200
    reasons = [line["reason"] for line in at_limit.json()["verdicts"]]
    assert reasons == ["invalid_input", "invalid_input", "correct", "invalid_input"]


def test_half_sent_headers_are_cut_off_in_bounded_time(open_server):
    with socket.create_connection(("127.0.0.1", _port(open_server))) as sock:
        sock.sendall(b"POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        _, waited = _read_until_closed(sock, 10)
    assert waited < HEADER_TIMEOUT_S + 2
    with socket.create_connection(("127.0.0.1", _port(open_server))) as sock:  # says nothing
        _, waited = _read_until_closed(sock, 10)
    assert waited < HEADER_TIMEOUT_S + 2
    # a byte every 0.3 s keeps no timer alive: the head as a whole has the deadline
    head = b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 40
    with socket.create_connection(("127.0.0.1", _port(open_server))) as sock:
        start = time.monotonic()
        try:
            for byte in head:
                sock.sendall(bytes([byte]))
                time.sleep(0.3)
                if time.monotonic() - start > HEADER_TIMEOUT_S + 3:
                    break
        except (BrokenPipeError, ConnectionResetError):
            pass
        _, _ = _read_until_closed(sock, 10)
        assert time.monotonic() - start < HEADER_TIMEOUT_S + 3
    assert _alive(open_server)


def test_a_trickled_body_is_cut_off_with_408(open_server):
    with socket.create_connection(("127.0.0.1", _port(open_server))) as sock:
        sock.sendall(b"POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     b"application/json\r\nContent-Length: 200\r\n\r\n{")
        start = time.monotonic()
        sock.settimeout(0.3)
        answer = b""
        while time.monotonic() - start < BODY_TIMEOUT_S + 5:
            try:
                sock.sendall(b" ")
                answer += sock.recv(4096)
                if answer.endswith(b"}"):
                    break
            except socket.timeout:
                continue
            except (BrokenPipeError, ConnectionResetError):
                break
        waited = time.monotonic() - start
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b"did not arrive within" in answer
    assert waited < BODY_TIMEOUT_S + 2


def test_a_chunked_body_past_the_limit_is_413(open_server):
    def chunks():
        for _ in range(40):
            yield b" " * 65536  # 2.5 MB in all; the server reads at most 1 MB
    answer = httpx.post(open_server.url + "/verify", content=chunks(), timeout=30,
                        headers=open_server.headers())
    assert answer.status_code == 413


def test_slow_clients_cannot_take_every_descriptor(tmp_path):
    """A server allowed 256 descriptors, 300 connections that never finish their head:
    the extra ones are turned away at once, the held ones cut at the head deadline,
    and a real request gets through within a few seconds."""
    def few_descriptors():
        resource.setrlimit(resource.RLIMIT_NOFILE, (256, 256))

    srv = Server("--workers", "1", "--preload", "exact", "--header-timeout", "1",
                 preexec_fn=few_descriptors)
    held = []
    try:
        for _ in range(300):
            sock = socket.create_connection(("127.0.0.1", _port(srv)), timeout=10)
            try:
                sock.sendall(b"POST /verify HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            except OSError:
                pass  # turned away already
            held.append(sock)
        fds = len(os.listdir(f"/proc/{srv.process.pid}/fd"))
        assert fds < 256
        start, status = time.monotonic(), None
        while time.monotonic() - start < 8 and status != 200:
            try:
                status = httpx.get(srv.url + "/health", timeout=5).status_code
            except httpx.HTTPError:
                status = None
            time.sleep(0.2)
        assert status == 200 and time.monotonic() - start < 5
        assert srv.process.poll() is None
    finally:
        for sock in held:
            sock.close()
        srv.stop()


# ---- bodies that are not JSON, and text UTF-8 cannot carry ---------------------------

BAD_JSON = {
    "nested_arrays": b'{"items": ' + b"[" * 200_000 + b"]" * 200_000 + b"}",
    "nested_objects": b'{"items": [' + b'{"a": ' * 100_000 + b"1" + b"}" * 100_000 + b"]}",
    "huge_integer": b'{"items": [' + b"7" * 5000 + b"]}",
    "invalid_utf8": b'{"items": [{"verifier": "exact", "completion": "\xff", "reference": "1"}]}',
    "utf8_encoded_surrogate": b'{"items": ["\xed\xa0\x80"]}',
    "truncated": b'{"items": [',
    "trailing_data": b'{"items": []} {"items": []}',
    "empty": b"",
}


@pytest.mark.parametrize("name", sorted(BAD_JSON))
def test_unparseable_json_of_any_kind_is_400(open_server, name):
    answer = _post(open_server, BAD_JSON[name])
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]
    one = httpx.post(open_server.url + "/verify/one", content=BAD_JSON[name], timeout=30,
                     headers=open_server.headers())
    assert one.status_code == 400
    assert _alive(open_server)


def test_a_lone_surrogate_completion_leaves_the_batch_intact(open_server):
    good = [{"verifier": "exact", "completion": "12", "reference": "12"},
            {"verifier": "exact", "completion": "3", "reference": "4"}]
    alone = [_post(open_server, json.dumps({"items": [c]})).json()["verdicts"][0] for c in good]
    lone = {"verifier": "exact", "completion": "x\udfff", "reference": "x\udfff"}
    body = json.dumps({"items": [good[0], lone, good[1]]})  # json escapes it as \udfff
    answer = _post(open_server, body)
    assert answer.status_code == 200
    verdicts = answer.json()["verdicts"]
    assert [verdicts[0], verdicts[2]] == alone
    # the wire carries model text through the verdicts' one lossless escape
    # (rlvr.textsafe): the six characters `\udfff`, read back as the surrogate
    assert verdicts[1]["score"] == 1.0 and verdicts[1]["details"]["answer"] == "x\\udfff"
    assert verdict_from_line(verdicts[1]).details["answer"] == "x\udfff"
    one = httpx.post(open_server.url + "/verify/one", content=json.dumps(lone), timeout=30,
                     headers=open_server.headers())
    assert one.status_code == 200 and one.json()["passed"] is True


# ---- an exposed bind without a token (private network namespace) --------------------

def test_an_exposed_bind_without_a_token_exits_before_listening(tmp_path):
    _require_netns()
    serve = ["serve", "--host", "0.0.0.0", "--port", "0", "--workers", "1",
             "--preload", "exact"]
    code, out, err, binds = _in_private_netns(tmp_path, serve, {})
    assert code == 2 and "refusing to listen on 0.0.0.0" in err, (code, out, err)
    assert binds == "" and "http://" not in out  # no socket was ever bound
    code, out, err, binds = _in_private_netns(tmp_path, [*serve, "--token", "in-argv"], {})
    assert code == 2 and "argv" in err and binds == "", (code, err)
    code, out, err, binds = _in_private_netns(tmp_path, serve, {"RLVR_SERVE_TOKEN": ""})
    assert code == 2 and "empty" in err and binds == ""
    run = tmp_path / "run"
    run.mkdir()
    (run / "metrics.jsonl").write_text("")  # a run that has not logged a step yet
    code, out, err, binds = _in_private_netns(
        tmp_path, ["view", str(run), "--host", "0.0.0.0", "--port", "0"], {})
    assert code == 2 and "--expose-without-auth" in err and binds == "", (code, err)
    # control: with a token from the environment the same command binds and serves
    code, out, err, binds = _in_private_netns(tmp_path, serve, {"RLVR_SERVE_TOKEN": "t0k"})
    assert code is None and "http://0.0.0.0:" in out, (code, out, err)
    assert binds.startswith("('0.0.0.0', 0)")


# ---- a client that does not read its answer ------------------------------------------

def test_a_client_that_does_not_read_its_answer_is_dropped():
    got, size = _unread_answer(write_timeout_s=1.0)
    assert got < size  # cut off: the server let go of the answer
    got, size = _unread_answer(write_timeout_s=30.0)  # control: a patient server
    assert got >= size


# ---- what a request may choose: names, options, endpoints, secrets, limits ----------

@pytest.fixture(scope="module")
def choice_server():
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


def test_an_import_path_item_is_refused_and_runs_nothing(choice_server, tmp_path):
    marker = tmp_path / "pwned"
    attack = _item("os:system", {"command": f"touch {marker}"}, "", "")
    response = choice_server.post("/verify", {"items": [_item("exact"), attack]})
    _refused(response, "items[1].verifier", "'os:system' is an import path")
    one = choice_server.post("/verify/one", attack)
    _refused(one, "verifier", "'os:system' is an import path")
    strict = choice_server.post("/verify", {"items": [attack], "strict": False, "source": "f.jsonl"})
    _refused(strict, "items[0].verifier", "f.jsonl:1: field 'verifier'")
    _settle(choice_server)
    assert not marker.exists()


def test_a_request_cannot_turn_the_sandbox_off(choice_server, tmp_path):
    marker = tmp_path / "written-on-the-host"
    program = f"open({str(marker)!r}, 'w').write('x')\ndef f():\n    return 1\n"
    attack = _item("code", {"sandbox": "none-unsafe"}, {"asserts": ["assert f() == 1"]},
                   program)
    _refused(choice_server.post("/verify", {"items": [attack]}), "items[0].options.sandbox",
             "option 'sandbox' of verifier 'code' is set by the operator only")
    memory = _item("code", {"memory_mb": 2048}, {"asserts": ["assert f() == 1"]}, program)
    _refused(choice_server.post("/verify", {"items": [memory]}), "items[0].options.memory_mb")
    _settle(choice_server)
    assert not marker.exists()


@pytest.mark.parametrize("option", ["base_url", "api_key_env", "model"])
def test_judge_endpoint_key_and_model_are_refused_and_nothing_is_sent(choice_server, listener,
                                                                      option):
    port = listener.getsockname()[1]
    chosen = {"base_url": f"http://127.0.0.1:{port}/v1", "api_key_env": CANARY_VAR,
              "model": "attacker-model"}
    response = choice_server.post("/verify", {"items": [
        _item("judge", {option: chosen[option]}, "the answer is 1", "1")]})
    _refused(response, f"items[0].options.{option}", f"option {option!r} of verifier 'judge'")
    both = choice_server.post("/verify/one", _item("judge", chosen, "the answer is 1", "1"))
    assert both.status_code == 400
    assert not _connected(listener)
    assert CANARY not in response.text + both.text


def test_the_refusal_does_not_tell_whether_a_variable_is_set(choice_server):
    """The old error said whether the named variable was set: an oracle for the
    server's environment. The refusal reads the same for a set and an unset name."""
    answers = []
    for name in (CANARY_VAR, "RLVR_TEST_SURELY_UNSET_VAR"):
        response = choice_server.post("/verify", {"items": [
            _item("judge", {"api_key_env": name}, "ref", "x")]})
        answers.append(response.json()["error"].replace(name, "NAME"))
    assert answers[0] == answers[1]


def test_a_cache_dir_from_a_request_is_refused_and_nothing_is_created(choice_server, tmp_path):
    cache = tmp_path / "attacker-cache"
    response = choice_server.post("/verify", {"items": [
        _item("judge", {"cache_dir": str(cache)}, "the answer is 1", "1")]})
    _refused(response, "items[0].options.cache_dir", "set by the operator only")
    _settle(choice_server)
    assert not cache.exists()


def test_composite_components_cannot_name_code_or_operator_options(choice_server, tmp_path, listener):
    marker = tmp_path / "pwned"
    code = _item("composite", {"components": [
        {"verifier": "exact"},
        {"verifier": "os:system", "options": {"command": f"touch {marker}"}}]})
    _refused(choice_server.post("/verify", {"items": [code]}),
             "items[0].options.components[1].verifier", "import path")
    judge = _item("composite", {"components": [
        {"verifier": "judge", "options": {
            "base_url": f"http://127.0.0.1:{listener.getsockname()[1]}/v1"}}]})
    _refused(choice_server.post("/verify", {"items": [judge]}),
             "items[0].options.components[0].options.base_url")
    nested = _item("composite", {"components": [{"verifier": "composite", "options": {
        "components": [{"verifier": "code", "options": {"sandbox": "none-unsafe"}}]}}]})
    _refused(choice_server.post("/verify", {"items": [nested]}),
             "items[0].options.components[0].options.components[0].options.sandbox")
    r1 = _item("r1_math", {"format_options": {"answer_tag": "answer", "cache_dir": "/tmp/x"}})
    _refused(choice_server.post("/verify", {"items": [r1]}),
             "items[0].options.format_options.cache_dir")
    _settle(choice_server)
    assert not marker.exists() and not _connected(listener)


def test_grading_options_and_operator_plugins_are_accepted(choice_server):
    items = [_item("exact", {"case_sensitive": True}, "Yes", "#### yes"),
             _item("exact", {"case_sensitive": False}, "Yes", "#### yes"),
             _item("math", {"answer_form": "value"}, "2", "\\boxed{2}"),
             _item("composite", {"components": [{"verifier": "exact", "weight": 1.0}]}),
             _item(SLOW, None, 0, "")]
    response = choice_server.post("/verify", {"items": items})
    assert response.status_code == 200, response.text
    verdicts = response.json()["verdicts"]
    assert [v["passed"] for v in verdicts] == [False, True, True, True, True]
    assert verdicts[4]["details"] == {"seconds": 0.0}  # the plugin ran, in the worker


def test_an_item_time_limit_is_capped_by_the_servers(choice_server):
    start = time.monotonic()
    response = choice_server.post("/verify", {"items": [
        _item(SLOW, None, 30, "") | {"timeout_s": 1000},
        _item(SLOW, None, 30, "") | {"timeout_s": 0.5}]})
    elapsed = time.monotonic() - start
    verdicts = response.json()["verdicts"]
    # uncapped, the first item would sleep its 30 s and pass
    assert verdicts[0] == {"score": 0.0, "passed": False, "reason": "timeout",
                           "details": {"limit_s": SERVER_LIMIT_S}}
    assert verdicts[1]["details"] == {"limit_s": 0.5}  # a shorter limit is kept
    assert elapsed < 20


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
