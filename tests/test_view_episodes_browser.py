"""An episode's transcript in a real browser (the system's Chromium through Playwright):
the turns in order with what was trained and what was context, the episode curves, and
a tool result holding `<script>` and an event handler rendered as inert text."""

from __future__ import annotations

import json

import pytest

from episode_fixtures import STEPS, episode_line, write_episode_run
from view_helpers import browser_page, require_browser, served

pytestmark = pytest.mark.slow

EVIL = '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">'
BOLD = '<b id="injected">bold?</b> The answer is \\boxed{%d}.'


def evil_run(tmp_path):
    """The hacked episode run plus one attempt at the last step whose tool printed
    HTML and whose model wrote some."""
    run = write_episode_run(tmp_path / "episodes", hacked=True)
    line = episode_line(STEPS, 0, 0, "honest", output=EVIL)
    line["prompt_id"] = "evil"
    reference = int(line["reference"])
    messages = line["episode"]["messages"]
    messages[-1]["content"] = line["completion"] = BOLD % reference
    with open(run / "rollouts.jsonl", "a") as handle:
        handle.write(json.dumps(line) + "\n")
    return run, line


def test_transcript_curves_and_inert_text(tmp_path):
    require_browser()
    pytest.importorskip("starlette", reason="rlvr view needs starlette (pip install 'rlvr[view]')")
    run, line = evil_run(tmp_path)
    with served(run) as url, browser_page() as page:
        page.goto(url)
        page.wait_for_selector(".transcript")
        evil = page.locator(".group", has=page.locator(".prompt-id", has_text="evil"))
        # text_content, not inner_text: an attempt off screen is not rendered (content-visibility)
        labels = evil.locator(".transcript > .turn .turn-label").all_text_contents()
        assert labels == ["turn 1 · assistant · model · trained",
                          "user · tool result · context",
                          "turn 2 · assistant · model · trained"]
        texts = evil.locator(".transcript > .turn pre").all_text_contents()
        assert texts[1] == "[python tool result]\n" + EVIL and texts[2] == line["completion"]
        assert "2 turn(s) · ended done · 1 tool call(s), 0 error(s) · reward from environment" \
            in evil.locator(".episode-meta").text_content()
        # the text stayed text: nothing ran, no element was made from it
        assert page.evaluate("typeof window.__pwned") == "undefined"
        made = "document.querySelectorAll('#groups script, #groups img, #injected').length"
        assert page.evaluate(made) == 0
        # the first prompt is folded, context
        assert evil.locator("details.first-prompt summary").text_content() == \
            "first prompt: 1 message(s), context"
        # the episode curves: turns k share one chart, the end kinds another
        page.wait_for_selector("#charts[data-drawn]")
        traces = page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('.chart')]
            .map((c) => [c.dataset.key, (c.data || []).map((t) => t.name)]))""")
        assert traces["episode/success_by_turn"] == ["turn 1", "turn 2", "turn 3"]
        assert sorted(traces["episode/end"]) == ["done", "env_error", "env_timeout"]
        assert traces["episode/turns_mean"] == ["episodes"]  # the run's name
