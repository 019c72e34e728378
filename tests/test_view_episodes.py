"""rlvr view's JSON API on a hand-built multi-turn run (tests/episode_fixtures.py): an
episode's transcript in order with what was trained and what was context, its end
reason and counts, the audit's episode codes, and the episode/* curves (only where a
run's episodes are more than single turns)."""

from __future__ import annotations

import pytest

pytest.importorskip("starlette", reason="rlvr view needs starlette (pip install 'rlvr[view]')")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
from starlette.testclient import TestClient  # noqa: E402

from audit_fixtures import write_run  # noqa: E402
from episode_fixtures import (FAULT_STEP, HACK_START, MAX_TURNS, PROMPTS, STEPS, HACK,  # noqa: E402
                              problem, read_jsonl, tool_call, write_episode_run)
from rlvr.view.episodes import episode_curves, segments  # noqa: E402
from rlvr.view.runinfo import ViewRun  # noqa: E402
from rlvr.view.server import Runs, build_app  # noqa: E402


def client_for(*paths) -> TestClient:
    runs = Runs([ViewRun.open(p) for p in paths])
    return TestClient(build_app(runs, "test", 5.0), base_url="http://127.0.0.1")


@pytest.fixture(scope="module")
def hacked_run(tmp_path_factory):
    return write_episode_run(tmp_path_factory.mktemp("runs") / "episodes", hacked=True)


def attempts_at(client, step):
    body = client.get(f"/api/runs/0/steps/{step}").json()
    return {(g["prompt_id"], a["sample"]): a for g in body["groups"] for a in g["attempts"]}


def test_a_transcript_in_order_with_trained_and_context_parts(hacked_run):
    step = HACK_START
    shown = attempts_at(client_for(hacked_run), step)
    a, b = problem(step, 0)
    honest = shown[(f"pow-0-{step}", 0)]["episode"]
    assert {k: honest[k] for k in ("turns", "end_reason", "reward_source", "tool_calls",
                                   "tool_errors", "model_tokens", "env_tokens")} == {
        "turns": 2, "end_reason": "done", "reward_source": "environment", "tool_calls": 1,
        "tool_errors": 0, "model_tokens": 24, "env_tokens": 9}
    assert [(m["role"], m["part"]) for m in honest["messages"]] == [
        ("user", "prompt"), ("assistant", "model"), ("user", "tool_result"),
        ("assistant", "model")]
    assert honest["messages"][2]["text"] == f"[python tool result]\n{a ** b}"
    assert honest["messages"][1]["segments"] == [{"kind": "tool_call", "text": tool_call(a, b)}]
    assert honest["messages"][3]["segments"] == [
        {"kind": "text", "text": f"The answer is \\boxed{{{a ** b}}}."}]
    assert honest["turn_rewards"] == [None, 1.0] and honest["more_messages"] == 0
    # prompt 1's tool results come back as role "tool", with the tool's name
    other = shown[(f"pow-1-{step}", 0)]["episode"]["messages"][2]
    assert (other["role"], other["part"], other["name"]) == ("tool", "tool_result", "python")
    # a timeout: the episode's end and counts, no transcript (no environment tokens)
    timeout = shown[(f"pow-0-{step}", 2)]["episode"]
    assert timeout["end_reason"] == "env_timeout" and "messages" not in timeout


def test_single_turn_attempts_look_as_before(hacked_run, tmp_path):
    one_turn = attempts_at(client_for(hacked_run), 1)[("pow-0-1", 3)]
    assert one_turn["episode"] is None and one_turn["completion"] == "\\boxed{%d}" % (
        problem(1, 0)[0] ** problem(1, 0)[1])
    plain = write_run(tmp_path / "plain", hacked=False)  # no episode block at all
    body = client_for(plain).get("/api/runs/0/steps/1").json()
    assert all(a["episode"] is None for g in body["groups"] for a in g["attempts"])


def test_the_audits_episode_codes_on_the_page(hacked_run):
    client = client_for(hacked_run)
    hack = attempts_at(client, HACK_START)[(f"pow-0-{HACK_START}", 3)]
    assert hack["completion"] == HACK and hack["passed"]
    assert hack["flags"] == ["no_answer", "answer_outside_turn"]
    fault = attempts_at(client, FAULT_STEP)[(f"pow-0-{FAULT_STEP}", 2)]
    assert not fault["passed"] and fault["reward"] == 1.0 and "paid_env_fault" in fault["flags"]
    # the strict re-grade counts the paid faults as passed, none of them clean
    curve = client.get("/api/runs/0/strict").json()
    at = curve["x"].index(FAULT_STEP)
    lines = [r for r in read_jsonl(hacked_run / "rollouts.jsonl") if r["step"] == FAULT_STEP]
    assert curve["passed"][at] == pytest.approx((PROMPTS * 2 + 2) / len(lines))
    assert curve["strict"][at] == pytest.approx(PROMPTS / len(lines))  # sample 0 only
    assert curve["flagged"][at] == PROMPTS + 2


def test_episode_curves_share_charts_and_leave_out_what_never_happened(hacked_run):
    curves = client_for(hacked_run).get("/api/runs").json()[0]["curves"]
    metrics = read_jsonl(hacked_run / "metrics.jsonl")
    assert curves["episode/turns_mean"]["y"] == [m["episode/turns_mean"] for m in metrics]
    assert curves["episode/turns_mean"]["x"] == list(range(1, STEPS + 1))
    by_turn = [k for k in curves if curves[k].get("chart") == "episode/success_by_turn"]
    assert by_turn == [f"episode/success_by_turn_{k}" for k in range(1, MAX_TURNS + 1)]
    assert [curves[k]["trace"] for k in by_turn] == ["turn 1", "turn 2", "turn 3"]
    assert curves["episode/success_by_turn_2"]["y"] == [m["episode/success_by_turn_2"]
                                                       for m in metrics]
    ends = {curves[k]["trace"] for k in curves if curves[k].get("chart") == "episode/end"}
    assert ends == {"done", "env_timeout", "env_error"}  # the others stay 0
    assert curves["episode/tool_errors_mean"]["chart"] == curves["episode/tool_calls_mean"]["chart"]


def test_single_turn_episode_metrics_draw_no_chart():
    rows = [{"step": s, "episode/turns_mean": 1.0, "episode/tool_calls_mean": 0.0,
             "episode/success_by_turn_1": 0.5, "episode/end_done": 1.0,
             "episode/end_env_error": 0.0} for s in (1, 2)]
    assert episode_curves(rows) == {}
    rows[1]["episode/end_done"] = 0.75  # one episode ended otherwise: shown
    assert episode_curves(rows)["episode/turns_mean"]["y"] == [1.0, 1.0]


def test_segments_split_tool_calls_from_prose():
    text = 'Let me check. <tool_call>{"name": "python"}</tool_call> then <tool_call>open'
    assert segments(text) == [
        {"kind": "text", "text": "Let me check. "},
        {"kind": "tool_call", "text": '<tool_call>{"name": "python"}</tool_call>'},
        {"kind": "text", "text": " then "},
        {"kind": "tool_call", "text": "<tool_call>open"}]
    assert segments("") == [{"kind": "text", "text": ""}]
