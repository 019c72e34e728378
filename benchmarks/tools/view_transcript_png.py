"""The README's picture of an episode's transcript in `rlvr view`, taken in the system's
Chromium.

    python -m benchmarks.tools.view_transcript_png RUN_DIR [--step S] [--prompt-id ID --sample N]
    python -m benchmarks.tools.view_transcript_png --demo DIR   # writes a hand-built run first

Starts `rlvr view RUN_DIR` on 127.0.0.1 (a free port), opens the step (default: the
last), unfolds the chosen attempt's first prompt and saves a PNG of that attempt
(default docs/images/episode_transcript.png). Without --prompt-id, the first attempt
with a transcript that the audit flags, else the first with a transcript. --demo DIR
writes tests/episode_fixtures.py's run (python_tool, a policy that learned to leave the
answer to the tool's output) to DIR and shows it.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from benchmarks import REPO as ROOT
from benchmarks import use_test_helpers

use_test_helpers()
DEFAULT_OUT = ROOT / "docs" / "images" / "episode_transcript.png"


def pick_attempt(page, prompt_id: str | None, sample: int | None):
    """The locator of the attempt to show (see the module docstring)."""
    if prompt_id is not None:
        group = page.locator(".group", has=page.locator(".prompt-id", has_text=prompt_id))
        chosen = group.locator(f'.attempt[data-sample="{sample or 0}"]')
    else:
        flagged = page.locator(".attempt.flagged:has(.transcript)")
        chosen = flagged if flagged.count() else page.locator(".attempt:has(.transcript)")
    if not chosen.count():
        raise SystemExit("no such attempt with a transcript at this step")
    return chosen.first


def shoot(url: str, out: Path, step: int | None, prompt_id: str | None,
          sample: int | None, width: int) -> None:
    from playwright.sync_api import sync_playwright
    from view_helpers import chromium_args, chromium_path

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=chromium_args())
        page = browser.new_page(viewport={"width": width, "height": 900})
        page.goto(url)
        page.wait_for_selector(".attempt")
        if step is not None:
            page.fill("#step-input", str(step))
            page.dispatch_event("#step-input", "change")
            page.wait_for_function(
                f"document.querySelector('#step-title').textContent.startsWith('step {step}:')")
        attempt = pick_attempt(page, prompt_id, sample)
        attempt.scroll_into_view_if_needed()
        attempt.locator("details.first-prompt").evaluate("(d) => { d.open = true; }")
        time.sleep(0.3)
        out.parent.mkdir(parents=True, exist_ok=True)
        attempt.screenshot(path=str(out))
        browser.close()
    print(f"wrote {out} ({out.stat().st_size} bytes)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", help="the run directory to show")
    parser.add_argument("--demo", help="write the hand-built episode run here and show it")
    parser.add_argument("--step", type=int, help="the step to show (default: the last)")
    parser.add_argument("--prompt-id", help="the prompt whose attempt to show")
    parser.add_argument("--sample", type=int, help="that prompt's sample (default 0)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--width", type=int, default=1000, help="page width in pixels")
    args = parser.parse_args()
    from view_helpers import served

    if args.demo:
        from episode_fixtures import write_episode_run

        run = write_episode_run(Path(args.demo), hacked=True)
    elif args.run:
        run = Path(args.run)
    else:
        parser.error("give RUN (or --demo DIR)")
    with served(run) as url:
        shoot(url, args.out, args.step, args.prompt_id, args.sample, args.width)
    print(json.dumps({"run": str(run), "out": str(args.out)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
