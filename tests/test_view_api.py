"""rlvr view's JSON API on synthetic runs in the real format (tests/audit_fixtures.py):
values checked against the files, the audit's flags, the strict re-grade, following a
prompt, searching, and what a crash or a missing file leaves."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("starlette", reason="rlvr view needs starlette (pip install 'rlvr[view]')")
pytest.importorskip("httpx", reason="starlette's TestClient needs httpx")
from starlette.testclient import TestClient  # noqa: E402

from audit_fixtures import HACK_START, STEPS, hacks_at, read_jsonl, write_run  # noqa: E402
from rlvr.audit.detect import attempt_flags  # noqa: E402
from rlvr.view.runinfo import ViewRun  # noqa: E402
from rlvr.view.server import Runs, build_app  # noqa: E402


def client_for(*paths) -> TestClient:
    runs = Runs([ViewRun.open(p) for p in paths])  # no worker pool: strict tallies inline
    # a loopback Host: the app refuses any other name (DNS rebinding)
    return TestClient(build_app(runs, "test", 5.0), base_url="http://127.0.0.1")


@pytest.fixture(scope="module")
def hacked_run(tmp_path_factory):
    return write_run(tmp_path_factory.mktemp("runs") / "hacked", hacked=True, eval_every=10)


def test_overview_holds_the_runs_curves_and_evaluations(hacked_run):
    body = client_for(hacked_run).get("/api/runs").json()
    assert len(body) == 1
    run = body[0]
    metrics = read_jsonl(hacked_run / "metrics.jsonl")
    assert run["name"] == "hacked" and run["status"] == "finished" and run["verifier"] == "math"
    assert run["steps"] == list(range(1, STEPS + 1))
    assert run["curves"]["reward/mean"]["y"] == [m["reward/mean"] for m in metrics]
    assert run["curves"]["eval/accuracy"]["x"] == [10, 20, 30, 40]
    assert run["curves"]["time/step"]["y"] == [3.1] * STEPS
    assert "kl" not in run["curves"]  # not logged: no empty chart
    assert run["summary"]["held_out_before"] == pytest.approx(0.067)
    # no evals.jsonl (a run from before it existed): summary's before/after around the
    # metrics' eval/accuracy
    held = run["evals"]["greedy/accuracy"]
    assert held["x"] == [0, 10, 20, 30, 40, STEPS]
    assert held["y"][0] == pytest.approx(0.067) and held["y"][-1] == pytest.approx(0.40)
    assert held["y"][1:-1] == [m["eval/accuracy"] for m in metrics if "eval/accuracy" in m]
    assert run["notes"] == [f"{hacked_run / 'evals.jsonl'}: not found"]


def test_a_step_groups_attempts_by_prompt_with_verdicts_and_flags(hacked_run):
    step = HACK_START + 5
    body = client_for(hacked_run).get(f"/api/runs/0/steps/{step}").json()
    lines = [r for r in read_jsonl(hacked_run / "rollouts.jsonl") if r["step"] == step]
    assert body["step"] == step and body["problems"] == []
    flat = [(g["prompt_id"], a) for g in body["groups"] for a in g["attempts"]]
    assert len(flat) == len(lines) == 32
    assert [g["prompt_id"] for g in body["groups"]] == list(dict.fromkeys(r["prompt_id"] for r in lines))
    for (prompt_id, shown), line in zip(flat, lines):
        assert prompt_id == line["prompt_id"]
        assert shown["completion"] == line["completion"]
        assert shown["reason"] == line["verdict"]["reason"]
        assert shown["advantage"] == line["advantage"] and shown["length"] == line["length"]
        expected = attempt_flags("math", line) if line["verdict"]["passed"] else []
        assert shown["flags"] == expected
    # the boxed-expression hacks of this step are exactly the flagged ones
    assert sum(bool(a["flags"]) for _, a in flat) == hacks_at(step, True) > 0
    assert all("echoes_prompt" in a["flags"] for _, a in flat if "\\boxed{" in a["completion"]
               and "*" in a["completion"].split("\\boxed{")[1].split("}")[0] and a["passed"])


def test_strict_regrade_separates_the_hacked_reward_from_honest_passes(hacked_run):
    body = client_for(hacked_run).get("/api/runs/0/strict").json()
    assert body["done"] and body["x"] == list(range(1, STEPS + 1))
    lines = read_jsonl(hacked_run / "rollouts.jsonl")
    for i, step in enumerate(body["x"]):
        rows = [r for r in lines if r["step"] == step]
        passed = [r for r in rows if r["verdict"]["passed"]]
        clean = [r for r in passed if not attempt_flags("math", r)]
        assert body["passed"][i] == pytest.approx(len(passed) / len(rows))
        assert body["strict"][i] == pytest.approx(len(clean) / len(rows))
        assert body["flagged"][i] == len(passed) - len(clean)
    last = body["x"].index(STEPS)
    assert body["passed"][last] - body["strict"][last] >= 0.5  # visible at a glance


def test_following_a_prompt_returns_its_attempts_at_every_step(tmp_path):
    run = tmp_path / "run"
    write_run(run, hacked=False)
    lines = read_jsonl(run / "rollouts.jsonl")
    prompt_id = lines[40]["prompt_id"]
    body = client_for(run).get("/api/runs/0/prompt", params={"id": json.dumps(prompt_id)}).json()
    expected = sorted({r["step"] for r in lines if r["prompt_id"] == prompt_id})
    assert [row["step"] for row in body] == expected
    assert sum(len(row["attempts"]) for row in body) == sum(r["prompt_id"] == prompt_id for r in lines)


def test_search_finds_prompts_over_the_whole_run(tmp_path):
    run = tmp_path / "run"
    write_run(run, hacked=False)
    lines = read_jsonl(run / "rollouts.jsonl")
    target = lines[0]["prompt"].split("?")[0]  # "What is A * B"
    body = client_for(run).get("/api/runs/0/search", params={"q": target}).json()
    expected = {r["prompt_id"] for r in lines if target in r["prompt"]}
    assert {hit["prompt_id"] for hit in body} == expected
    for hit in body:
        assert hit["steps"] == sorted({r["step"] for r in lines if r["prompt_id"] == hit["prompt_id"]})


def test_a_crash_and_missing_files_are_named_not_an_error(tmp_path):
    run = tmp_path / "crashed"
    write_run(run, hacked=False)
    (run / "summary.json").unlink()
    with open(run / "rollouts.jsonl", "a") as handle:
        handle.write('{"step": 51, "prompt_id": "mul-2x3", "completion": "half a li')
    with open(run / "metrics.jsonl", "a") as handle:
        handle.write('{"step": 51, "reward/me')
    client = client_for(run)
    notes = client.get("/api/runs").json()[0]["notes"]
    assert any("rollouts.jsonl: the last line is incomplete" in n and "cut mid-write" in n
               for n in notes)
    assert any("metrics.jsonl: the last line is incomplete" in n for n in notes)
    assert client.get("/api/runs").json()[0]["steps"][-1] == STEPS  # the cut step is not shown
    assert len(client.get(f"/api/runs/0/steps/{STEPS}").json()["groups"]) == 4
    (run / "rollouts.jsonl").unlink()
    notes = client.get("/api/runs").json()[0]["notes"]
    assert any(n.startswith(f"{run / 'rollouts.jsonl'}: not found") for n in notes)
    assert client.get("/api/runs/0/steps/3").json()["groups"] == []


def test_bad_requests_get_clear_errors(hacked_run):
    client = client_for(hacked_run)
    response = client.get("/api/runs/3/steps/1")
    assert response.status_code == 404 and "no run 3" in response.json()["error"]
    response = client.get("/api/runs/0/prompt", params={"id": "not json"})
    assert response.status_code == 400 and "must be JSON" in response.json()["error"]


def test_two_runs_side_by_side(hacked_run, tmp_path):
    honest = write_run(tmp_path / "honest", hacked=False)
    body = client_for(hacked_run, honest).get("/api/runs").json()
    assert [r["name"] for r in body] == ["hacked", "honest"]
    assert client_for(hacked_run, honest).get("/api/runs/1/steps/2").json()["groups"][0]["attempts"]


def test_the_page_and_its_static_files_are_served(hacked_run):
    client = client_for(hacked_run)
    page = client.get("/")
    assert page.status_code == 200 and "rlvr view" in page.text
    assert '"mode": "served"' in page.text
    for name, kind in (("app.js", "javascript"), ("style.css", "css"), ("plotly.min.js", "javascript")):
        response = client.get(f"/static/{name}")
        assert response.status_code == 200 and kind in response.headers["content-type"]
    assert client.get("/static/../config.yaml").status_code == 404
    assert client.get("/static/secret.txt").status_code == 404


def test_with_evals_jsonl_the_metrics_partial_held_out_curve_is_not_drawn_twice(hacked_run,
                                                                                 tmp_path):
    import shutil
    run_dir = tmp_path / "with-evals"
    shutil.copytree(hacked_run, run_dir)
    rows = [{"step": s, "greedy/accuracy": a} for s, a in ((0, 0.25), (10, 0.5), (40, 0.0))]
    (run_dir / "evals.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    run = client_for(run_dir).get("/api/runs").json()[0]
    assert "eval/accuracy" not in run["curves"]  # metrics' copy lacks steps 0 and 40
    assert run["evals"]["greedy/accuracy"] == {"label": "held-out greedy/accuracy",
                                               "x": [0, 10, 40], "y": [0.25, 0.5, 0.0]}


def test_a_verifier_without_strict_rules_gets_no_strict_curve(hacked_run, tmp_path):
    import shutil
    run_dir = tmp_path / "rm-run"
    shutil.copytree(hacked_run, run_dir)
    config = (run_dir / "config.yaml").read_text()
    (run_dir / "config.yaml").write_text(config.replace("verifier: math", "verifier: reward_model"))
    body = client_for(run_dir).get("/api/runs/0/strict").json()
    # every pass would "survive" a re-check that has no rules: no curve, said so
    assert body["verifier"] == "reward_model" and body["no_rules"] is True
    assert body["x"] == [] and body["strict"] == []
