"""The judge verifier against a scripted endpoint: references, options, strict parsing,
scoring, retries with backoff, time limits, the cache, the concurrency limit, counters.
(Injection: tests/test_judge_injection.py; a real model: tests/test_judge_real_model.py.)"""

from __future__ import annotations

import threading
import time

import pytest

from judge_helpers import ScriptedEndpoint, answering, chat_body
from rlvr.verifiers import Case, InvalidReference, VerifierPool, get_verifier
from rlvr.verifiers.judge import COUNTERS, JudgeVerifier
from rlvr.verifiers.judge.client import CallStats, Endpoint, post_chat, retry_after_seconds

RUBRIC = {"rubric": [{"criterion": "Names Paris", "weight": 2},
                     {"criterion": "One sentence", "weight": 1}],
          "reference_answer": "Paris"}


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    for name in ("RLVR_JUDGE_URL", "RLVR_JUDGE_MODEL", "RLVR_JUDGE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("RLVR_JUDGE_SLOTS", str(tmp_path / "slots"))


def judge(endpoint: ScriptedEndpoint, **options) -> JudgeVerifier:
    return JudgeVerifier(**{"base_url": endpoint.base_url, "model": "m", "backoff_s": 0.01,
                            **options})


# ---- references and options: clear errors naming the field, before any request ----

@pytest.mark.parametrize("reference, field", [
    (42, "reference must be"), ("  ", "empty"), ({}, "'rubric' or 'reference_answer'"),
    ({"rubric": []}, "'rubric' must be a non-empty list"),
    ({"rubric": ["x"]}, "rubric[0]"), ({"rubric": [{"weight": 1}]}, "rubric[0].criterion"),
    ({"rubric": [{"criterion": "a", "weight": 0}]}, "rubric[0].weight"),
    ({"rubric": [{"criterion": "a", "weight": True}]}, "rubric[0].weight"),
    ({"rubric": [{"criterion": "a", "wieght": 1}]}, "unknown field(s) wieght"),
    ({"rubric": [{"criterion": "a", "id": "k"}, {"criterion": "b", "id": "k"}]}, "repeat"),
    ({"rubric": [{"criterion": "a", "id": "has space"}]}, "rubric[0].id"),
    ({"reference_answer": "x", "pass_threshold": 1.5}, "pass_threshold"),
    ({"reference_answer": ""}, "reference_answer"), ({"answer": "x"}, "unknown reference field"),
])
def test_bad_references_are_invalid_naming_the_field(reference, field):
    with ScriptedEndpoint(answering('{"c1": 1}')) as ep:
        verifier = judge(ep)
        with pytest.raises(InvalidReference, match=f"judge: .*{_re(field)}"):
            verifier.check_reference(reference)
        with pytest.raises(InvalidReference):
            verifier.verify("Paris", reference)
    assert ep.requests == []


def _re(text: str) -> str:
    import re
    return re.escape(text)


@pytest.mark.parametrize("options, message", [
    ({"base_url": None}, "'base_url' is required"), ({"base_url": "ftp://x"}, "http"),
    ({"model": None}, "'model' is required"), ({"api_key": "sk-1"}, "never put the key"),
    ({"api_key_env": "NOT_SET_ANYWHERE"}, "NOT_SET_ANYWHERE, which is not set"),
    ({"retries": -1}, "'retries'"), ({"retries": 1.5}, "'retries'"),
    ({"max_concurrency": 0}, "'max_concurrency'"), ({"timeout_s": 0}, "'timeout_s'"),
    ({"injection": "maybe"}, "'injection'"), ({"tempreature": 0}, "unknown option"),
    ({"price_per_1k_tokens": {"input": 1}}, "unknown key"),
])
def test_bad_options_fail_at_construction_naming_the_option(options, message):
    base = {"base_url": "http://127.0.0.1:9/v1", "model": "m"}
    with pytest.raises(ValueError, match=_re(message)):
        JudgeVerifier(**{**base, **options})


def test_url_and_model_default_from_the_environment(monkeypatch):
    with ScriptedEndpoint(answering('{"c1": 10}')) as ep:
        monkeypatch.setenv("RLVR_JUDGE_URL", ep.base_url)
        monkeypatch.setenv("RLVR_JUDGE_MODEL", "env-model")
        assert JudgeVerifier().verify("Paris", "Paris").score == 1.0
    assert ep.requests[0]["model"] == "env-model"
    assert ep.requests[0]["temperature"] == 0.0 and ep.requests[0]["n"] == 1


def test_api_key_is_read_from_the_named_variable_and_sent_as_bearer(monkeypatch):
    monkeypatch.setenv("MY_JUDGE_KEY", "sk-test-123")
    with ScriptedEndpoint(answering('{"c1": 10}')) as ep:
        judge(ep, api_key_env="MY_JUDGE_KEY").verify("Paris", "Paris")
    assert ep.headers[0]["Authorization"] == "Bearer sk-test-123"


# ---- strict parsing: every malformed shape is an error verdict, never a guess ----

MALFORMED = [
    'Sure! {"c1": 5}', '{"c1": 5} Hope that helps.', '```json\n{"c1": 5}\n```',
    '{"c1": 5}{"c1": 6}', '{"c1": 5}\n{"c1": 6}', '{"c1": 5, "c2": 3}', '{}',
    '{"c1": 5, "c1": 6}', '{"c1": "5"}', '{"c1": true}', '{"c1": null}', '{"c1": [5]}',
    '{"c1": 11}', '{"c1": -1}', '{"c1": NaN}', '{"c1": Infinity}', '[{"c1": 5}]', '',
    '{"c1": 5', '"{\\"c1\\": 5}"', '{"C1": 5}', '{"c1 ": 5}', '5',
]


@pytest.mark.parametrize("content", MALFORMED)
def test_malformed_verdicts_are_unparseable_errors(content):
    with ScriptedEndpoint(answering(content)) as ep:
        verdict = judge(ep).verify("Paris", "Paris")
    assert (verdict.score, verdict.passed, verdict.reason) == (0.0, False, "judge_unparseable")
    assert verdict.details["raw"] == content and verdict.details["error"]
    assert verdict.details["counters"]["judge/errors"] == 1


@pytest.mark.parametrize("payload", [
    {"choices": []}, {"choices": [{"message": {"content": '{"c1": 5}'}}] * 2},
    {"choices": [{"message": {"content": None}}]}, {"choices": [{"text": '{"c1": 5}'}]},
    {"error": "x"}, [], b"not json at all", b'{"c1": 5}',
])
def test_malformed_response_bodies_are_unparseable_errors(payload):
    with ScriptedEndpoint(lambda body, headers: (200, {}, payload)) as ep:
        verdict = judge(ep).verify("Paris", "Paris")
    assert (verdict.score, verdict.reason) == (0.0, "judge_unparseable")
    assert len(ep.requests) == 1  # a bad answer is not retried: it would come back the same


@pytest.mark.parametrize("content, score", [
    ('{"c1": 10, "c2": 10}', 1.0), ('  \n{"c2": 0, "c1": 10}\n ', 2 / 3),
    ('{"c1": 5, "c2": 10}', 2 / 3), ('{"c1": 0, "c2": 0}', 0.0), ('{"c1": 7.5, "c2": 3}', 0.6),
])
def test_weighted_scores(content, score):
    with ScriptedEndpoint(answering(content)) as ep:
        verdict = judge(ep).verify("Paris.", RUBRIC, prompt="Capital of France?")
    assert verdict.score == pytest.approx(score)
    assert verdict.passed == (score == 1.0)  # default threshold: fully correct
    assert verdict.reason == ("passed" if score == 1.0 else "below_threshold")
    assert set(verdict.details["scores"]) == {"c1", "c2"}


def test_pass_threshold_and_custom_scale_and_ids():
    reference = {"rubric": [{"criterion": "a", "id": "accuracy", "weight": 3},
                            {"criterion": "b", "id": "style"}], "pass_threshold": 0.7}
    with ScriptedEndpoint(answering('{"accuracy": 4, "style": 1}')) as ep:
        verdict = judge(ep, scale=4).verify("x", reference)
    assert verdict.score == pytest.approx((3 * 1 + 1 * 0.25) / 4) and verdict.passed
    assert '"accuracy": <integer 0-4>' in ep.user_messages()[0]


# ---- retries, backoff, time limits ----

def flaky(*statuses: int, retry_after: str | None = None):
    """Answer with `statuses` in turn, then a good verdict."""
    queue = list(statuses)

    def script(body, headers):
        if queue:
            extra = {"Retry-After": retry_after} if retry_after is not None else {}
            return queue.pop(0), extra, {"error": {"message": "busy"}}
        return 200, {}, chat_body('{"c1": 10}')
    return script


@pytest.mark.parametrize("statuses", [(429,), (500, 503), (502, 429, 504)])
def test_retries_on_429_and_5xx_then_succeeds(statuses):
    with ScriptedEndpoint(flaky(*statuses)) as ep:
        verdict = judge(ep).verify("Paris", "Paris")
    assert verdict.score == 1.0 and len(ep.requests) == len(statuses) + 1
    assert verdict.details["counters"]["judge/retries"] == len(statuses)
    assert verdict.details["counters"]["judge/requests"] == len(statuses) + 1


def test_gives_up_after_the_retries_with_an_error_verdict():
    with ScriptedEndpoint(flaky(500, 500, 500, 500)) as ep:
        verdict = judge(ep, retries=2).verify("Paris", "Paris")
    assert (verdict.score, verdict.reason) == (0.0, "judge_unavailable")
    assert "HTTP 500" in verdict.details["error"] and len(ep.requests) == 3


def test_client_errors_are_not_retried():
    with ScriptedEndpoint(flaky(400)) as ep:
        verdict = judge(ep).verify("Paris", "Paris")
    assert verdict.reason == "judge_unavailable" and len(ep.requests) == 1


def test_backoff_doubles_with_jitter_and_honours_retry_after():
    delays: list[float] = []
    with ScriptedEndpoint(flaky(500, 500, 500)) as ep:
        endpoint = Endpoint(ep.base_url, retries=3, backoff_s=0.1, max_backoff_s=0.3)
        post_chat(endpoint, {"messages": []}, CallStats(), sleep=delays.append)
    assert len(delays) == 3
    for delay, base in zip(delays, (0.1, 0.2, 0.3)):  # capped at max_backoff_s
        assert base / 2 <= delay <= base
    delays.clear()
    with ScriptedEndpoint(flaky(429, retry_after="1.5")) as ep:
        post_chat(Endpoint(ep.base_url, backoff_s=0.01), {"messages": []}, CallStats(),
                  sleep=delays.append)
    assert delays == [1.5]


def test_retry_after_as_http_date_and_garbage():
    from email.utils import formatdate
    assert 8 <= retry_after_seconds(formatdate(time.time() + 10, usegmt=True)) <= 10
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None


def test_a_retry_after_past_the_deadline_stops_early():
    with ScriptedEndpoint(flaky(429, retry_after="30")) as ep:
        began = time.monotonic()
        verdict = judge(ep, total_timeout_s=2).verify("Paris", "Paris")
    assert verdict.reason == "judge_unavailable" and "deadline" in verdict.details["error"]
    assert time.monotonic() - began < 1.5 and len(ep.requests) == 1


def test_a_slow_endpoint_times_out_and_is_retried():
    with ScriptedEndpoint(answering('{"c1": 10}'), delay_s=1.0) as ep:
        began = time.monotonic()
        verdict = judge(ep, timeout_s=0.2, retries=1).verify("Paris", "Paris")
    assert verdict.reason == "judge_unavailable" and "timed out" in verdict.details["error"]
    assert len(ep.requests) == 2 and time.monotonic() - began < 1.0


def test_an_unreachable_endpoint_is_an_error_verdict():
    verdict = JudgeVerifier(base_url="http://127.0.0.1:9/v1", model="m", retries=1,
                            backoff_s=0.01).verify("Paris", "Paris")
    assert verdict.reason == "judge_unavailable" and "cannot connect" in verdict.details["error"]


# ---- the cache ----

def test_the_same_item_is_judged_once():
    with ScriptedEndpoint(answering('{"c1": 10, "c2": 5}')) as ep:
        verifier = judge(ep)
        first = verifier.verify("Paris.", RUBRIC, prompt="Capital?")
        second = verifier.verify("Paris.", RUBRIC, prompt="Capital?")
        assert len(ep.requests) == 1
        assert (second.score, second.passed) == (first.score, first.passed)
        assert second.details["judge"]["cached"] and not first.details["judge"]["cached"]
        assert second.details["counters"] == {"judge/cache_hits": 1}
        verifier.verify("Lyon.", RUBRIC, prompt="Capital?")  # another completion: asked
        verifier.verify("Paris.", RUBRIC, prompt="Other?")   # another task: asked
        judge(ep, model="m2").verify("Paris.", RUBRIC, prompt="Capital?")  # another model
    assert len(ep.requests) == 4


def test_errors_are_not_cached():
    with ScriptedEndpoint(flaky(400)) as ep:
        verifier = judge(ep)
        assert verifier.verify("Paris", "Paris").reason == "judge_unavailable"
        assert verifier.verify("Paris", "Paris").score == 1.0
    assert len(ep.requests) == 2


def test_the_memory_cache_is_bounded_and_the_disk_cache_outlives_it(tmp_path):
    with ScriptedEndpoint(answering('{"c1": 10}')) as ep:
        small = judge(ep, cache_size=2)
        for text in ("a", "b", "c", "a"):  # "a" was evicted by "c"
            small.verify(text, "Paris")
        assert len(ep.requests) == 4 and len(small.cache) == 2
        judge(ep, cache_dir=str(tmp_path / "c")).verify("Paris", "Paris")
        fresh = judge(ep, cache_dir=str(tmp_path / "c"), cache_size=0)  # a new process, say
        assert fresh.verify("Paris", "Paris").details["judge"]["cached"]
    assert len(ep.requests) == 5


# ---- concurrency and counters ----

def test_concurrency_is_limited_per_endpoint_across_threads():
    with ScriptedEndpoint(answering('{"c1": 10}'), delay_s=0.2) as ep:
        verifiers = [judge(ep, max_concurrency=2) for _ in range(6)]
        threads = [threading.Thread(target=v.verify, args=(f"answer {i}", "Paris"))
                   for i, v in enumerate(verifiers)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert len(ep.requests) == 6 and ep.max_in_flight == 2


def test_concurrency_is_limited_across_the_pools_worker_processes():
    with ScriptedEndpoint(answering('{"c1": 10}'), delay_s=0.3) as ep:
        options = {"base_url": ep.base_url, "model": "m", "max_concurrency": 1}
        with VerifierPool(workers=3) as pool:
            verdicts = pool.verify([Case("judge", f"answer {i}", "Paris", options)
                                    for i in range(6)])
    assert [v.score for v in verdicts] == [1.0] * 6, verdicts
    assert ep.max_in_flight == 1


def test_counters_tokens_cost_and_the_trainer_metrics():
    from rlvr.training.rewards import verdict_metrics

    def script(body, headers):
        return 200, {}, chat_body('{"c1": 10}', prompt_tokens=1000, completion_tokens=200)
    before = COUNTERS["judge/prompt_tokens"]
    with ScriptedEndpoint(script) as ep:
        verifier = judge(ep, price_per_1k_tokens={"prompt": 0.5, "completion": 2.0})
        verdicts = [verifier.verify(t, "Paris") for t in ("Paris", "Paris", "Paris!")]
    first = verdicts[0].details
    assert first["judge"]["prompt_tokens"] == 1000 and first["judge"]["cost"] == 0.9
    assert COUNTERS["judge/prompt_tokens"] - before == 2000
    metrics = verdict_metrics([verdicts])
    assert metrics["judge/requests"] == 2 and metrics["judge/cache_hits"] == 1
    assert metrics["judge/prompt_tokens"] == 2000 and metrics["judge/completion_tokens"] == 400
    assert metrics["judge/cost"] == pytest.approx(1.8)


def test_registered_and_reachable_through_the_pool():
    with ScriptedEndpoint(answering('{"c1": 10}')) as ep:
        options = {"base_url": ep.base_url, "model": "m"}
        assert isinstance(get_verifier("judge", **options), JudgeVerifier)
        with VerifierPool(workers=1) as pool:
            good, invalid = pool.verify([Case("judge", "Paris", "Paris", options),
                                         Case("judge", "Paris", {"rubric": []}, options)])
    assert good.score == 1.0 and invalid.is_invalid
    assert "'rubric' must be a non-empty list" in invalid.details["error"]


def test_structured_sends_the_verdict_schema_that_judge_serve_accepts():
    from rlvr.serve.chat_schema import SchemaError, integer_fields

    with ScriptedEndpoint(answering('{"c1": 10, "c2": 10}')) as ep:
        judge(ep, structured=True).verify("Paris.", RUBRIC)
        judge(ep).verify("Paris.", RUBRIC)
    schema = ep.requests[0]["response_format"]
    assert "response_format" not in ep.requests[1]
    assert integer_fields(schema) == [("c1", 0, 10), ("c2", 0, 10)]
    loose = {**schema["json_schema"]["schema"], "additionalProperties": True}
    for bad in ({"type": "json_object"}, {"type": "json_schema", "json_schema": {
            "schema": loose}}):
        with pytest.raises(SchemaError):
            integer_fields(bad)
