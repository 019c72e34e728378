"""rlvr view in a real browser (the system's Chromium through Playwright): the page of a
real small run renders its curves, shows a given attempt's text, verdict reason and
advantage, moves to another step, and filters; the audit's marks and the strict
re-grade on a hacked run; a live run followed; the exported file on its own; and the
issue's must-show check with Chromium's own --dump-dom."""

from __future__ import annotations

import html
import json
import os
import subprocess
from pathlib import Path

import pytest

from audit_fixtures import STEPS, hacks_at, read_jsonl, write_run
from cli_helpers import run_cli
from train_helpers import TINY_OVERRIDES, plugin_reward
from view_helpers import browser_page, chromium_args, require_browser, served, wait_until

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """A real 3-step `rlvr train` run of the tiny model (a reward that differs within
    groups, so advantages are not all zero)."""
    require_browser()
    pytest.importorskip("starlette", reason="rlvr view needs starlette (pip install 'rlvr[view]')")
    run_dir = tmp_path_factory.mktemp("view") / "tiny-run"
    tests_dir = str(Path(__file__).parent)
    os.environ["PYTHONPATH"] = os.pathsep.join([tests_dir, os.environ.get("PYTHONPATH", "")])
    result = run_cli("train", "--run-dir", str(run_dir), "steps=3", "sampling.prompts_per_step=6",
                     *plugin_reward("train_helpers:LengthVerifier"), *TINY_OVERRIDES, timeout=240)
    assert result.returncode == 0, result.stderr
    return run_dir


def step_lines(run_dir: Path, step: int) -> list[dict]:
    return [r for r in read_jsonl(run_dir / "rollouts.jsonl") if r["step"] == step]


def unique_attempt(lines: list[dict]) -> dict:
    counts = {}
    for line in lines:
        counts[line["completion"]] = counts.get(line["completion"], 0) + 1
    return next(line for line in lines if counts[line["completion"]] == 1 and line["completion"].strip())


def attempt_text(page, completion: str) -> str | None:
    """The text of the .attempt element whose completion is exactly `completion`."""
    return page.evaluate("""(completion) => {
        const node = [...document.querySelectorAll('.attempt')]
            .find((a) => a.querySelector('.completion').textContent === completion);
        return node ? node.innerText : null; }""", completion)


def test_real_run_curves_attempts_steps_and_filters(real_run):
    last = step_lines(real_run, 3)
    chosen = unique_attempt(last)
    with served(real_run) as url, browser_page() as page:
        page.goto(url)
        page.wait_for_selector(".attempt")
        # curves: each chart is a plotly plot with data (one trace per run or more)
        page.wait_for_selector("#charts[data-drawn]")
        traces = page.evaluate("[...document.querySelectorAll('.chart')].map((c) => (c.data || []).length)")
        assert len(traces) >= 5 and all(n >= 1 for n in traces)
        drawn = page.evaluate("[...document.querySelectorAll('.chart')].map((c) => !!c.querySelector('svg.main-svg .scatterlayer .trace'))")
        assert all(drawn)  # plotly drew a line in every chart
        keys = page.evaluate("[...document.querySelectorAll('.chart')].map((c) => c.dataset.key)")
        assert {"honest", "reward/mean", "entropy", "response_length/mean", "time/step"} <= set(keys)
        assert "tiny-run" in page.inner_text("#runs")
        # the last step is shown: the chosen attempt with its verdict reason and advantage
        assert page.inner_text("#step-title").startswith("step 3:")
        shown = attempt_text(page, chosen["completion"])
        assert shown is not None
        assert chosen["verdict"]["reason"] in shown
        advantage = chosen["advantage"]
        assert f"advantage {'+' if advantage > 0 else ''}{advantage:.3f}" in shown
        assert page.locator(".attempt").count() == len(last)
        # another step
        page.click("#step-prev")
        page.wait_for_function("document.querySelector('#step-title').textContent.startsWith('step 2:')")
        earlier = unique_attempt(step_lines(real_run, 2))
        assert attempt_text(page, earlier["completion"]) is not None
        assert page.locator(".attempt").count() == len(step_lines(real_run, 2))
        # filters: passed / failed counts as in the file
        lines = step_lines(real_run, 2)
        page.select_option("#filter-status", "passed")
        assert page.locator(".attempt").count() == sum(r["verdict"]["passed"] for r in lines)
        page.select_option("#filter-status", "failed")
        assert page.locator(".attempt").count() == sum(not r["verdict"]["passed"] for r in lines)
        page.select_option("#filter-status", "all")
        prompt = lines[0]["prompt"]
        page.fill("#search", prompt)
        expected = sum(r["prompt"].lower().find(prompt.lower()) >= 0 for r in lines)
        assert page.locator(".attempt").count() == expected > 0


def test_must_show_chromium_dump_dom(real_run):
    """The issue's check: headless Chromium's --dump-dom of / holds the run's name, the
    text of an attempt from the last step and its verdict reason."""
    chromium = require_browser()
    chosen = unique_attempt(step_lines(real_run, 3))
    with served(real_run) as url:
        dom = subprocess.run([chromium, "--headless", *chromium_args(), "--dump-dom",
                              "--virtual-time-budget=8000", url],
                             capture_output=True, text=True, timeout=120).stdout
    assert "tiny-run" in dom
    assert html.escape(chosen["completion"], quote=False) in dom
    assert f'class="reason">{html.escape(chosen["verdict"]["reason"], quote=False)}<' in dom


def test_hacked_run_flags_filter_and_strict_curve(tmp_path):
    require_browser()
    run = write_run(tmp_path / "hacked", hacked=True)
    with served(run) as url, browser_page() as page:
        page.goto(url)
        page.wait_for_selector(".attempt")
        page.select_option("#filter-status", "flagged")
        assert page.locator(".attempt.flagged").count() == hacks_at(STEPS, True)
        assert page.locator(".attempt").count() == hacks_at(STEPS, True)
        assert "echoes_prompt" in page.inner_text(".attempt.flagged .meta")
        page.select_option("#filter-status", "all")
        page.select_option("#filter-reason", "no_answer")
        lines = [r for r in read_jsonl(run / "rollouts.jsonl") if r["step"] == STEPS]
        assert page.locator(".attempt").count() == sum(r["verdict"]["reason"] == "no_answer" for r in lines)
        # the strict re-grade is drawn beside the reward: its last value is the clean share
        page.wait_for_function("""() => { const c = document.querySelector('.chart[data-key="honest"]');
            return c && c.data && c.data.some((t) => t.name.includes('strict') && t.x.length === %d); }""" % STEPS)
        strict = page.evaluate("""document.querySelector('.chart[data-key="honest"]').data
            .find((t) => t.name.includes('strict')).y""")
        passed = sum(r["verdict"]["passed"] for r in lines)
        assert strict[-1] == pytest.approx((passed - hacks_at(STEPS, True)) / len(lines))
        # following a prompt across steps
        page.click(".follow-button")
        page.wait_for_selector(".follow-step")
        prompt_id = page.inner_text(".group .prompt-id")
        steps = {r["step"] for r in read_jsonl(run / "rollouts.jsonl") if r["prompt_id"] == prompt_id}
        assert page.locator(".follow-step").count() == len(steps)


def test_a_running_run_is_followed_live(tmp_path):
    require_browser()
    source = write_run(tmp_path / "full", hacked=False)
    run = tmp_path / "live"
    run.mkdir()
    (run / "config.yaml").write_text((source / "config.yaml").read_text())
    metrics, rollouts = read_jsonl(source / "metrics.jsonl"), read_jsonl(source / "rollouts.jsonl")

    def write_until(step: int, mode: str) -> None:
        with open(run / "metrics.jsonl", mode) as m, open(run / "rollouts.jsonl", mode) as r:
            m.writelines(json.dumps(x) + "\n" for x in metrics if (mode == "w") == (x["step"] <= step) and x["step"] <= step)
            r.writelines(json.dumps(x) + "\n" for x in rollouts if (mode == "w") == (x["step"] <= step) and x["step"] <= step)

    write_until(3, "w")
    with served(run, refresh=1) as url, browser_page() as page:
        page.goto(url)
        page.wait_for_selector(".attempt")
        assert page.inner_text("#step-title").startswith("step 3:")
        assert "running" in page.inner_text("#runs")
        with open(run / "metrics.jsonl", "a") as m, open(run / "rollouts.jsonl", "a") as r:
            m.writelines(json.dumps(x) + "\n" for x in metrics if x["step"] in (4, 5))
            r.writelines(json.dumps(x) + "\n" for x in rollouts if x["step"] in (4, 5))
        page.wait_for_function("document.querySelector('#step-title').textContent.startsWith('step 5:')",
                               timeout=15000)
        # the curves are redrawn after the step (one chart per task): wait for the new points
        page.wait_for_function("""() => { const c = document.querySelector('.chart[data-key="reward/mean"]');
            return c && c.data && c.data[0].x.length === 5; }""", timeout=15000)
        xs = page.evaluate("""document.querySelector('.chart[data-key="reward/mean"]').data[0].x""")
        assert xs == [1, 2, 3, 4, 5]


def test_exported_page_works_alone(tmp_path):
    require_browser()
    run = write_run(tmp_path / "hacked", hacked=True)
    out = tmp_path / "report.html"
    result = run_cli("view", str(run), "--export", str(out), "--export-steps", "5")
    assert result.returncode == 0, result.stderr
    assert '"mode": "export"' in out.read_text()
    last = [r for r in read_jsonl(run / "rollouts.jsonl") if r["step"] == STEPS]
    with browser_page() as page:
        requests = []
        page.on("request", lambda request: requests.append(request.url))
        page.goto(out.as_uri())
        page.wait_for_selector(".attempt")
        page.wait_for_selector("#charts[data-drawn]")
        assert page.locator(".attempt").count() == len(last)
        assert attempt_text(page, last[5]["completion"]) is not None
        page.click("#step-first")
        page.wait_for_function("document.querySelector('#step-title').textContent.startsWith('step 1:')")
        page.click("#step-next")  # step 2 is not held: indices round(k * 49 / 4) = 0, 12, 24, 37, 49
        page.wait_for_function("document.querySelector('#step-title').textContent.includes('does not hold')")
        assert "1, 13, 25, 38, 50" in page.inner_text("#step-title")
    assert requests == [out.as_uri()]  # nothing fetched: one self-contained file
