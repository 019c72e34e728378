"""OpenEnv in both directions, over real servers on 127.0.0.1 (subprocesses the tests
stop): rlvr's `openenv` environment playing an environment written against openenv-core
alone; rlvr's own OpenEnv server answering openenv-core's own client (task choice,
verifier grading, token, public bind); a server that is gone stopping the run."""

from __future__ import annotations

import json

import pytest

from rlvr.data.records import TaskRecord
from rlvr.environments.ecosystem import openenv_client
from rlvr.environments.ecosystem.openenv_client import (OpenEnvOptionError,
                                                        RemoteEnvironmentGone, task_seed)
from rlvr.episodes.base import EpisodeLimits
from rlvr.errors import ExternalFault

LIMITS = EpisodeLimits(max_turns=3, max_tokens=256, step_timeout_s=20.0)


def test_options_are_checked_naming_the_field():
    with pytest.raises(OpenEnvOptionError, match=r"episodes\.options\.url"):
        openenv_client.parse_options({})
    with pytest.raises(OpenEnvOptionError, match=r"episodes\.options\.url"):
        openenv_client.parse_options({"url": "file:///etc/passwd"})
    with pytest.raises(OpenEnvOptionError, match=r"episodes\.options\.bogus"):
        openenv_client.parse_options({"url": "http://127.0.0.1:1", "bogus": 1})
    with pytest.raises(OpenEnvOptionError, match=r"episodes\.options\.seed_from_task"):
        openenv_client.parse_options({"url": "http://127.0.0.1:1", "seed_from_task": "yes"})
    with pytest.raises(OpenEnvOptionError, match=r"episodes\.options\.action_field: must"):
        openenv_client.parse_options({"url": "http://127.0.0.1:1", "action_field": ""})


def test_an_unset_token_variable_is_a_config_error(monkeypatch):
    monkeypatch.delenv("RLVR_TEST_OPENENV_TOKEN", raising=False)
    options = {"url": "http://127.0.0.1:1", "token_env": "RLVR_TEST_OPENENV_TOKEN"}
    with pytest.raises(OpenEnvOptionError, match=r"episodes\.options\.token_env: \$RLVR_TEST"):
        openenv_client.parse_options(options)
    monkeypatch.setenv("RLVR_TEST_OPENENV_TOKEN", "t0ken")
    assert openenv_client.parse_options(options).token_env == "RLVR_TEST_OPENENV_TOKEN"


def test_task_seed_is_the_records_own():
    a, b = (TaskRecord("p", "r", "exact", "task-7"), TaskRecord("q", "s", "exact", "task-7"))
    assert task_seed(a) == task_seed(b)  # the id alone: every episode of a group agrees
    assert task_seed(a) != task_seed(TaskRecord("p", "r", "exact", "task-8"))
    assert task_seed(a) == int.from_bytes(__import__("hashlib").sha256(b"task-7").digest()[:4],
                                          "big")


pytest.importorskip("openenv.core", reason="openenv-core is not installed "
                    "(pip install 'rlvr[openenv]')")
from openenv_helpers import rlvr_server, toy_server  # noqa: E402


@pytest.fixture(scope="module")
def toy():
    server = toy_server()
    yield server
    server.stop()


def _record_with_target(target: int) -> TaskRecord:
    """A record whose seed makes the toy server's digit `target`."""
    for i in range(1000):
        record = TaskRecord(f"guess #{i}", "", "exact", f"toy-{i}")
        if task_seed(record) % 10 == target:
            return record
    raise AssertionError("no id found")


def test_an_episode_against_a_plain_openenv_server(toy):
    record = _record_with_target(6)
    env = openenv_client.make(record, {"url": toy.url, "observation_field": "prompt"}, LIMITS)
    try:
        first = env.reset(record)
        # the record's prompt, then the server's first observation
        assert first == [{"role": "user", "content": f"{record.prompt}\n\nGuess my digit (0-9)."}]
        low = env.step("3")
        assert (low.reward, low.done, low.observation) == (0.0, False,
                                                           [{"role": "user", "content": "higher"}])
        high = env.step("8")
        assert (high.reward, high.done, high.observation[0]["content"]) == (0.0, False, "lower")
        right = env.step("6")
        assert (right.reward, right.done, right.observation) == (1.0, True, [])
    finally:
        env.close()


def test_the_episodes_of_a_group_play_the_same_task(toy):
    record = _record_with_target(2)
    envs = [openenv_client.make(record, {"url": toy.url}, LIMITS) for _ in range(3)]
    try:
        for env in envs:
            env.reset(record)
        assert [env.step("2").reward for env in envs] == [1.0, 1.0, 1.0]
    finally:
        for env in envs:
            env.close()


def test_whole_observation_as_json_when_no_field_is_named(toy):
    record = _record_with_target(0)
    env = openenv_client.make(record, {"url": toy.url, "include_prompt": False}, LIMITS)
    try:
        assert json.loads(env.reset(record)[0]["content"]) == {"prompt": "Guess my digit (0-9)."}
    finally:
        env.close()


def test_a_server_that_is_gone_stops_the_run_naming_its_url(toy):
    import socket

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}"
    record = _record_with_target(1)
    env = openenv_client.make(record, {"url": url}, LIMITS)
    with pytest.raises(RemoteEnvironmentGone, match=url) as caught:
        env.reset(record)
    assert isinstance(caught.value, ExternalFault)  # the CLI: exit 3 and the resume hint
    env.close()


def test_a_server_that_dies_mid_episode_stops_the_run():
    server = toy_server()
    record = _record_with_target(4)
    env = openenv_client.make(record, {"url": server.url}, LIMITS)
    try:
        env.reset(record)
        server.process.kill()
        server.process.wait()
        with pytest.raises(RemoteEnvironmentGone, match=server.url):
            env.step("1")
    finally:
        env.close()
        server.stop()


# -- rlvr's environments served to OpenEnv clients ------------------------------------

RECORDS = [{"prompt": "What is 6 * 7?", "reference": "42", "verifier": "exact", "id": "mul"},
           {"prompt": "What is 9 - 4?", "reference": "5", "verifier": "exact", "id": "sub"}]


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    path = tmp_path_factory.mktemp("openenv") / "tasks.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return path


@pytest.fixture(scope="module")
def served(tasks):
    server = rlvr_server(tasks)
    yield server
    server.stop()


def _client(url: str, token: str = ""):
    return openenv_client.make_client(url, token, 30.0)


def test_openenv_client_plays_rlvr_tasks_graded_by_their_verifier(served):
    with _client(served.url) as client:
        first = client.reset(task_id="mul")
        assert first.observation["prompt"] == "What is 6 * 7?"
        assert first.observation["task_id"] == "mul" and first.done is False
        right = client.step({"message": "Answer: 42"})
        assert (right.reward, right.done) == (1.0, True)
        assert right.observation["info"]["verdict"]["reason"] == "correct"
        client.reset(task_id="sub")
        wrong = client.step({"message": "It is 4"})
        assert (wrong.reward, wrong.done) == (0.0, True)
        assert wrong.observation["info"]["verdict"]["reason"] == "wrong_answer"


def test_the_seed_picks_the_task_and_unknown_ids_are_refused(served):
    with _client(served.url) as client:
        assert client.reset(seed=3).observation["task_id"] == RECORDS[3 % 2]["id"]
        with pytest.raises(RuntimeError, match="unknown task_id"):
            client.reset(task_id="../../etc/passwd")


def test_rlvr_tasks_through_the_openenv_environment_round_trip(served):
    """rlvr -> OpenEnv -> rlvr: the client side of this module on the server side's tasks."""
    record = TaskRecord("(unused)", "", "exact", "ignored")
    env = openenv_client.make(record, {"url": served.url, "observation_field": "prompt",
                                       "include_prompt": False}, LIMITS)
    try:
        prompt = env.reset(record)[0]["content"]
        index = task_seed(record) % 2
        assert prompt == RECORDS[index]["prompt"]
        reply = env.step(f"Answer: {RECORDS[index]['reference']}")
        assert (reply.reward, reply.done) == (1.0, True)
    finally:
        env.close()


def test_a_token_guards_every_path_but_health(tasks, monkeypatch):
    import httpx

    server = rlvr_server(tasks, token="s3cret")
    try:
        for token in ("", "wrong"):  # the handshake is refused (HTTP 403)
            client = _client(server.url, token)
            with pytest.raises(ConnectionError, match="HTTP 403"):
                client.reset(task_id="mul")
            client.close()
        # the openenv environment sends the token it reads from the operator's variable
        monkeypatch.setenv("RLVR_TEST_OPENENV_TOKEN", "s3cret")
        record = TaskRecord("(unused)", "", "exact", "ignored")
        env = openenv_client.make(record, {"url": server.url, "include_prompt": False,
                                           "token_env": "RLVR_TEST_OPENENV_TOKEN",
                                           "observation_field": "prompt"}, LIMITS)
        try:
            assert env.reset(record)[0]["content"] == RECORDS[task_seed(record) % 2]["prompt"]
        finally:
            env.close()
        with _client(server.url, "s3cret") as client:
            assert client.reset(task_id="mul").observation["task_id"] == "mul"
        assert httpx.get(server.url + "/health").status_code == 200
        assert httpx.get(server.url + "/schema").status_code == 401
        assert httpx.get(server.url + "/schema", headers={
            "Authorization": "Bearer s3cret"}).status_code == 200
        rebound = httpx.get(server.url + "/health", headers={"Host": "evil.example"})
        assert rebound.status_code == 400  # DNS rebinding: another name as Host
    finally:
        server.stop()


def test_a_public_bind_without_a_token_is_refused(tasks, capsys, monkeypatch):
    from rlvr.environments.ecosystem import openenv_http

    for name in ("RLVR_SERVE_TOKEN", "RLVR_SERVE_TOKEN_FILE"):
        monkeypatch.delenv(name, raising=False)
    assert openenv_http.main(["--data", str(tasks), "--host", "0.0.0.0"]) == 2
    assert "refusing to listen on 0.0.0.0" in capsys.readouterr().err
