"""The README's screenshots of `rlvr view`, taken in the system's Chromium.

    python -m benchmarks.tools.view_screenshots RUN_DIR          # e.g. the default demo's run
    python -m benchmarks.tools.view_screenshots --hacking runs/hacking-...   # bench_hacking's runs

Writes docs/images/view_curves.png and view_attempts.png from RUN_DIR, and
view_hacked.png (curves) and view_flagged.png (the attempts the audit flags) from a
synthetic run in the trainer's format whose policy boxes the question's own expression
(tests/audit_fixtures.py, modelled on a real red-team run). With --hacking ROOT:
docs/images/view_hacking.png, bench_hacking.py's three runs overlaid in one page.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from benchmarks import REPO as ROOT
from benchmarks import use_test_helpers

use_test_helpers()
IMAGES = ROOT / "docs" / "images"


def shoot(url: str, shots: list[tuple[str, str | None, str | None]]) -> None:
    """shots: (file name, element to scroll to, status filter)."""
    from playwright.sync_api import sync_playwright
    from view_helpers import chromium_args, chromium_path

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=chromium_args())
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        page.goto(url)
        page.wait_for_selector(".attempt")
        page.wait_for_selector("#charts[data-drawn]")
        time.sleep(2.5)  # the strict re-grade's first batches
        for name, anchor, status in shots:
            if status:
                page.select_option("#filter-status", status)
            if anchor:
                page.evaluate(f"document.querySelector('{anchor}').scrollIntoView()")
            time.sleep(0.5)
            page.screenshot(path=str(IMAGES / name))
            print(f"wrote {IMAGES / name}")
        browser.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run", nargs="?", help="the run directory to show (the default demo's)")
    parser.add_argument("--hacking", help="a bench_hacking.py root: its strict, lenient and "
                                          "rm runs in one page")
    args = parser.parse_args()
    from audit_fixtures import write_run
    from view_helpers import served

    IMAGES.mkdir(parents=True, exist_ok=True)
    if args.hacking:
        root = Path(args.hacking)
        with served(root / "strict", root / "lenient", root / "rm") as url:
            shoot(url, [("view_hacking.png", None, None)])
        return 0
    if not args.run:
        parser.error("give RUN (or --hacking ROOT)")
    with served(Path(args.run)) as url:
        shoot(url, [("view_curves.png", None, None),
                    ("view_attempts.png", "#attempts-section", None)])
    with tempfile.TemporaryDirectory() as tmp:
        hacked = write_run(Path(tmp) / "hacked-synthetic", hacked=True, eval_every=10)
        with served(hacked) as url:
            shoot(url, [("view_hacked.png", None, None),
                        ("view_flagged.png", "#attempts-section", "flagged")])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
