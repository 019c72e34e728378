"""`rlvr view` as a user starts it (a subprocess on a free port), and the system's
Chromium for the browser tests (Debian's `chromium` package: Playwright's own browser
download is not reachable from these machines, so Playwright drives the system one)."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from cli_helpers import SRC

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium_path() -> str | None:
    explicit = os.environ.get("RLVR_CHROMIUM")
    if explicit:
        return explicit
    return next((found for name in CHROMIUM_NAMES if (found := shutil.which(name))), None)


def chromium_args() -> list[str]:
    # Chromium refuses to start as root with its sandbox on (CI runs as root here).
    return ["--no-sandbox"] if os.geteuid() == 0 else []


def require_browser() -> str:
    path = chromium_path()
    if path is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium, or set "
                    "RLVR_CHROMIUM): the page is not tested in a browser")
    pytest.importorskip("playwright.sync_api", reason="Playwright is not installed "
                        "(pip install 'rlvr[test]'): the page is not tested in a browser")
    return path


@contextlib.contextmanager
def served(*runs: Path, refresh: float = 5.0, extra: tuple[str, ...] = ()) -> Iterator[str]:
    """`rlvr view RUN... --port 0` in a subprocess; yields its URL; stops it with SIGTERM
    and checks that it exited cleanly."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, "-m", "rlvr", "view", *map(str, runs),
                                "--port", "0", "--refresh", str(refresh), *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = process.stdout.readline()
        if "http://" not in line:
            process.kill()
            raise AssertionError(f"rlvr view did not start: {line!r} {process.stderr.read()}")
        yield line.split("on ", 1)[1].split(" ", 1)[0]
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            code = process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            raise AssertionError("rlvr view did not stop on SIGTERM within 20 s") from None
    assert code == 0, f"rlvr view exited {code}: {process.stderr.read()}"


@contextlib.contextmanager
def browser_page(width: int = 1300, height: int = 900) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=require_browser(),
                                             args=chromium_args())
        try:
            page = browser.new_page(viewport={"width": width, "height": height})
            yield page
        finally:
            browser.close()


def wait_until(condition, timeout: float = 15.0, interval: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(interval)
