"""`rlvr view` from the command line: bad input named with exit 2, a served page on a
chosen port that stops cleanly, and the exported file's contents."""

from __future__ import annotations

import json
import re
import socket
import urllib.request

import pytest

pytest.importorskip("starlette", reason="rlvr view needs starlette (pip install 'rlvr[view]')")

from audit_fixtures import STEPS, read_jsonl, write_run  # noqa: E402
from cli_helpers import run_cli  # noqa: E402
from rlvr.view.export import chosen_steps  # noqa: E402
from view_helpers import served  # noqa: E402


def test_a_missing_run_directory_is_named(tmp_path):
    result = run_cli("view", str(tmp_path / "nope"))
    assert result.returncode == 2
    assert f"{tmp_path / 'nope'}: no such run directory" in result.stderr


def test_a_directory_that_is_not_a_run_is_named(tmp_path):
    result = run_cli("view", str(tmp_path))
    assert result.returncode == 2 and "not a run directory" in result.stderr


def test_a_port_in_use_is_a_clear_error(tmp_path):
    run = write_run(tmp_path / "run", hacked=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = run_cli("view", str(run), "--port", str(port), timeout=60)
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr


def test_serves_on_loopback_and_stops_on_sigterm(tmp_path):
    run = write_run(tmp_path / "run", hacked=False)
    with served(run) as url:  # served() asserts exit status 0 after SIGTERM
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", url)
        with urllib.request.urlopen(url + "api/runs", timeout=30) as response:
            body = json.loads(response.read())
    assert body[0]["name"] == "run" and body[0]["steps"][-1] == STEPS


def test_export_holds_curves_strict_regrade_and_the_chosen_steps(tmp_path):
    run = write_run(tmp_path / "run", hacked=True)
    out = tmp_path / "report.html"
    result = run_cli("view", str(run), "--export", str(out), "--export-steps", "3", timeout=120)
    assert result.returncode == 0, result.stderr
    assert f"wrote {out}" in result.stdout
    text = out.read_text()
    boot = json.loads(re.search(r'<script id="rlvr-boot" type="application/json">(.*?)</script>',
                                text, re.S).group(1))
    data = boot["data"]
    assert boot["mode"] == "export" and data["runs"][0]["exported_steps"] == [1, 25, 50]
    lines = read_jsonl(run / "rollouts.jsonl")
    held = data["steps"]["0"]["50"]["groups"]
    assert [a["completion"] for g in held for a in g["attempts"]] == \
        [r["completion"] for r in lines if r["step"] == 50]
    assert data["strict"]["0"]["done"] and len(data["strict"]["0"]["x"]) == STEPS
    assert "Plotly" in text  # plotly.js inline


def test_a_completion_cannot_end_the_data_script(tmp_path):
    run = write_run(tmp_path / "run", hacked=False)
    with open(run / "rollouts.jsonl", "a") as handle:
        handle.write(json.dumps({"step": STEPS, "prompt_id": "x", "prompt": "p", "completion":
                                 "</script><script>alert(1)</script><!--", "verdict": {
                                     "passed": False, "score": 0.0, "reason": "wrong_answer"}}) + "\n")
    out = tmp_path / "report.html"
    assert run_cli("view", str(run), "--export", str(out), timeout=120).returncode == 0
    text = out.read_text()
    boot = re.search(r'<script id="rlvr-boot" type="application/json">(.*?)</script>', text, re.S).group(1)
    assert "alert(1)" in boot and "</script" not in boot  # escaped as \u003c/script
    assert json.loads(boot)["data"]["steps"]["0"][str(STEPS)]["groups"][-1]["attempts"][0]["completion"] \
        == "</script><script>alert(1)</script><!--"


@pytest.mark.parametrize("steps, most, expected", [
    ([1, 2, 3], 5, [1, 2, 3]),
    (list(range(1, 11)), 1, [10]),
    (list(range(1, 11)), 4, [1, 4, 7, 10]),   # indices round(k * 9 / 3) = 0, 3, 6, 9
    ([2, 4, 8, 16, 32], 3, [2, 8, 32]),
    ([1, 2, 3], 0, []),
])
def test_chosen_steps_spread_from_first_to_last(steps, most, expected):
    assert chosen_steps(steps, most) == expected
