"""`rlvr view` against requests a cross-site page could send and text a policy could
write: the empty search on a run with few matches (it used to loop forever), the
request timeout, and an exported page whose completions hold the template's own
placeholders. The Host check is in tests/test_serve_security.py, beside rlvr serve's."""

from __future__ import annotations

import json
import re
import threading
import time

import httpx
import pytest

pytest.importorskip("starlette", reason="rlvr view needs starlette (pip install 'rlvr[view]')")
from starlette.testclient import TestClient  # noqa: E402

from audit_fixtures import STEPS, read_jsonl, write_run  # noqa: E402
from cli_helpers import run_cli  # noqa: E402
from rlvr.view.rollouts import RolloutsFile  # noqa: E402
from rlvr.view.runinfo import ViewRun  # noqa: E402
from rlvr.view.server import Runs, build_app  # noqa: E402
from view_helpers import served  # noqa: E402

PLACEHOLDERS = "{{SCRIPT}} {{BOOT}} {{HEAD}} {{TITLE}} {{OTHER}}"


@pytest.fixture(scope="module")
def small_run(tmp_path_factory):
    run = write_run(tmp_path_factory.mktemp("runs") / "small", hacked=False)
    # far fewer lines than the search's record limit (200 prompts x 64): the case that hung
    assert len(read_jsonl(run / "rollouts.jsonl")) < 200 * 64
    return run


def test_an_empty_search_returns_nothing_at_once_over_http(small_run):
    with served(small_run) as url:
        start = time.monotonic()
        for query in ("", "q="):
            answer = httpx.get(f"{url}api/runs/0/search?{query}", timeout=15)
            assert answer.status_code == 200 and answer.json() == []
        # a real query still finds what the file holds (checked against the lines)
        target = read_jsonl(small_run / "rollouts.jsonl")[0]["prompt"].split("?")[0]
        hits = httpx.get(f"{url}api/runs/0/search", params={"q": target}, timeout=15).json()
        expected = {r["prompt_id"] for r in read_jsonl(small_run / "rollouts.jsonl")
                    if target in r["prompt"]}
        assert {h["prompt_id"] for h in hits} == expected and expected
        assert time.monotonic() - start < 15


def _within(seconds: float, scan) -> list:
    """`scan()`'s records, or a failure (not a hang) when it takes past `seconds`."""
    box: list = []
    worker = threading.Thread(target=lambda: box.append(list(scan())), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"the scan still runs after {seconds} s"
    return box[0]


def test_the_scan_never_passes_the_end_of_the_file(small_run):
    rollouts = RolloutsFile(small_run / "rollouts.jsonl")
    assert _within(10, lambda: rollouts.find("")) == []
    lines = read_jsonl(small_run / "rollouts.jsonl")
    last = json.dumps(lines[-1]["completion"], ensure_ascii=False)[1:-1]
    found = _within(10, lambda: rollouts.find(last, limit=10_000))
    assert found and found[-1] == lines[-1]  # the last line is found, then the scan ends
    assert _within(10, lambda: rollouts.find("no such text anywhere", limit=10_000)) == []
    # a deadline already past stops the scan before its first record
    assert _within(10, lambda: rollouts.find('"step"', deadline=time.monotonic() - 1)) == []


def test_a_request_past_its_timeout_gets_503(small_run):
    runs = Runs([ViewRun.open(small_run)])
    client = TestClient(build_app(runs, "t", 5.0, request_timeout_s=0.3),
                        base_url="http://127.0.0.1")

    def slow_search(index, text, deadline=None):
        time.sleep(2.0)
        return []

    runs.search = slow_search
    start = time.monotonic()
    answer = client.get("/api/runs/0/search", params={"q": "x"})
    assert answer.status_code == 503 and "0.3 s" in answer.json()["error"]
    assert time.monotonic() - start < 1.9


def test_an_exported_completion_keeps_the_templates_placeholders(tmp_path):
    run = write_run(tmp_path / "run", hacked=False)
    completion = f"before {PLACEHOLDERS} after"
    with open(run / "rollouts.jsonl", "a") as handle:
        handle.write(json.dumps({"step": STEPS, "prompt_id": "tpl", "prompt": PLACEHOLDERS,
                                 "completion": completion, "verdict": {
                                     "passed": False, "score": 0.0, "reason": "wrong_answer"}})
                     + "\n")
    out = tmp_path / "report.html"
    result = run_cli("view", str(run), "--export", str(out), timeout=120)
    assert result.returncode == 0, result.stderr
    text = out.read_text()
    # the page's structure is whole: one data script, one app script, one title
    boots = re.findall(r'<script id="rlvr-boot" type="application/json">(.*?)</script>',
                       text, re.S)
    assert len(boots) == 1 and text.count("<title>rlvr view: run</title>") == 1
    data = json.loads(boots[0])["data"]
    held = [a["completion"] for g in data["steps"]["0"][str(STEPS)]["groups"]
            for a in g["attempts"]]
    assert completion in held
    # the placeholders appear only inside the data (as the completion wrote them)
    outside = text.replace(boots[0], "")
    assert "{{SCRIPT}}" not in outside and "{{BOOT}}" not in outside


def test_a_rollout_holding_a_lone_surrogate_is_served_and_exported(tmp_path):
    """Model text read back from a run file may hold a lone surrogate (JSON's \\ud800
    escape reads back as one): the API answers it and the export writes it, escaped."""
    run = write_run(tmp_path / "run", hacked=False)
    completion = "so \ud800 \\boxed{4}"
    with open(run / "rollouts.jsonl", "a") as handle:
        handle.write(json.dumps({"step": STEPS, "prompt_id": "lone", "prompt": "2+2?",
                                 "completion": completion, "verdict": {
                                     "passed": True, "score": 1.0, "reason": "correct"}})
                     + "\n")
    client = TestClient(build_app(Runs([ViewRun.open(run)]), "t", 5.0),
                        base_url="http://127.0.0.1")
    answer = client.get(f"/api/runs/0/steps/{STEPS}")
    assert answer.status_code == 200
    answer.content.decode("utf-8")  # strict UTF-8 on the wire
    held = [a["completion"] for g in answer.json()["groups"] for a in g["attempts"]]
    assert completion in held  # JSON's \ud800 escape reads back as the same text
    found = client.get("/api/runs/0/search", params={"q": "boxed{4}"})
    assert found.status_code == 200
    out = tmp_path / "report.html"
    result = run_cli("view", str(run), "--export", str(out), timeout=120)
    assert result.returncode == 0, result.stderr
    boot = re.search(r'<script id="rlvr-boot" type="application/json">(.*?)</script>',
                     out.read_bytes().decode("utf-8"), re.S).group(1)
    data = json.loads(boot)["data"]
    assert completion in [a["completion"] for g in data["steps"]["0"][str(STEPS)]["groups"]
                          for a in g["attempts"]]
