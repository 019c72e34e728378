"""How fast `rlvr view` opens a big run, measured as a user meets it: a browser loading
the page of a run whose rollouts.jsonl is ~1 GB, until the last step's attempts are on
screen, then until the curves are drawn (after plotly.js compiles).

    python -m benchmarks.systems.bench_view                  # 1 GB, 5 page loads
    python -m benchmarks.systems.bench_view --gb 0.2 --repeats 3

The run is synthetic (written here, in the trainer's format: 256 attempts a step,
~4 KB each, the math verifier's verdicts) so the size is exact. The peer is what a
viewer that loads the whole file does: reading and parsing every line, timed once in
the same run. A 1 MB run's page is measured in turn with it (the same
page without the size). Needs the `view` extra, Playwright and a system Chromium (see
tests/view_helpers.py). Ends with:

    view: G GB rollouts (S steps x 256 attempts): attempts shown in X s (spread), curves
    in C s (spread), another step in Y s (spread); a 1 MB run: X1 / C1 / Y1 s; reading
    the whole file takes Z s (median of N first visits)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks import REPO as ROOT
from benchmarks import use_test_helpers

ATTEMPTS, PROMPTS = 256, 32


def write_run(path: Path, gigabytes: float, seed: int = 0) -> tuple[int, int]:
    """A run directory with ~`gigabytes` of rollouts; returns (steps, bytes)."""
    from rlvr.config import load_config, save_config
    from rlvr.training.config import TrainConfig

    rng = random.Random(seed)
    path.mkdir(parents=True, exist_ok=True)
    save_config(load_config(TrainConfig, overrides=["name=big", "reward.verifier=math",
                                                    "model.path=smollm2-135m-instruct"]),
                path / "config.yaml")
    filler = " ".join(f"step{k}" for k in range(600))  # ~4 KB of reasoning text
    target, written, step = int(gigabytes * 1e9), 0, 0
    with open(path / "rollouts.jsonl", "w") as rollouts, open(path / "metrics.jsonl", "w") as metrics:
        while written < target:
            step += 1
            lines, passed = [], 0
            for i in range(ATTEMPTS):
                a, b = rng.randint(2, 99), rng.randint(2, 99)
                ok = rng.random() < min(0.9, 0.1 + step / 2000)
                passed += ok
                answer = a + b if ok else a + b + 1
                lines.append(json.dumps({
                    "step": step, "prompt_id": f"add-{a}-{b}-{i // (ATTEMPTS // PROMPTS)}",
                    "sample": i % (ATTEMPTS // PROMPTS), "prompt": f"What is {a} + {b}?",
                    "reference": str(a + b),
                    "completion": f"Let me think. {filler} So {a} + {b} = {answer}. \\boxed{{{answer}}}",
                    "finish_reason": "stop", "length": 900,
                    "verdict": {"score": float(ok), "passed": ok,
                                "reason": "correct" if ok else "wrong_answer",
                                "details": {"answer": str(answer), "method": "boxed"}},
                    "reward": float(ok), "advantage": rng.uniform(-1, 1)}) + "\n")
            text = "".join(lines)
            rollouts.write(text)
            written += len(text)
            metrics.write(json.dumps({"step": step, "reward/mean": passed / ATTEMPTS,
                                      "accuracy": passed / ATTEMPTS, "entropy": 0.8,
                                      "response_length/mean": 900.0, "clip_frac": 0.01,
                                      "time/step": 5.0}) + "\n")
    return step, written


def full_read_seconds(path: Path) -> float:
    """The peer: what loading every attempt costs (read + parse every line)."""
    began = time.perf_counter()
    count = 0
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            json.loads(line)
            count += 1
    return time.perf_counter() - began


def page_loads(url: str, repeats: int, middle_step: int, browser: object) -> dict[str, list[float]]:
    """Seconds from navigation to: the last step's attempts on screen ("shown"), the
    curves drawn ("curves", after plotly.js compiles), another step on screen; each in
    a fresh browser context (an empty cache: a first visit). Then the page loaded again
    in that context until its curves are drawn ("revisit": the browser's cache)."""
    times: dict[str, list[float]] = {"shown": [], "curves": [], "step": [], "revisit": []}
    for _ in range(repeats):
        context = browser.new_context()
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector("#charts[data-drawn]")
        # The page's own marks, in ms from the navigation's start: the frame after the
        # attempts were drawn (the browser paints them before plotly.js runs) and the end
        # of the last chart.
        marks = page.evaluate("Object.fromEntries(performance.getEntriesByType('mark')"
                              ".reverse().map((m) => [m.name, m.startTime]))")
        times["shown"].append(marks["rlvr:attempts-painted"] / 1000)
        times["curves"].append(marks["rlvr:charts-drawn"] / 1000)
        began = time.perf_counter()
        page.fill("#step-input", str(middle_step))
        page.dispatch_event("#step-input", "change")
        page.wait_for_function(f"document.querySelector('#step-title').textContent"
                               f".startsWith('step {middle_step}:')")
        times["step"].append(time.perf_counter() - began)
        began = time.perf_counter()  # a second visit: plotly.js cached (and its compiled code)
        page.goto(url)
        page.wait_for_selector("#charts[data-drawn]")
        times["revisit"].append(time.perf_counter() - began)
        context.close()
    return times


def measure(runs: list[tuple[Path, int]], repeats: int) -> list[dict[str, list[float]]]:
    """Every run's page loads, the runs taking turns so drift hits them alike."""
    from playwright.sync_api import sync_playwright
    use_test_helpers()
    from view_helpers import chromium_args, chromium_path, served

    results: list[dict[str, list[float]]] = [{"shown": [], "curves": [], "step": [], "revisit": []}
                                             for _ in runs]
    with contextlib.ExitStack() as stack:
        urls = [stack.enter_context(served(run)) for run, _ in runs]
        playwright = stack.enter_context(sync_playwright())
        browser = playwright.chromium.launch(executable_path=chromium_path(), args=chromium_args())
        for _ in range(repeats):
            for (run, steps), url, result in zip(runs, urls, results):
                for key, values in page_loads(url, 1, max(1, steps // 2), browser).items():
                    result[key] += values
        browser.close()
    return results


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gb", type=float, default=1.0, help="rollouts.jsonl size (default 1)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--dir", help="where to write the runs (default: a temp dir, removed)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        big, small = Path(tmp) / "big-run", Path(tmp) / "small-run"
        began = time.perf_counter()
        steps, size = write_run(big, args.gb)
        small_steps, small_size = write_run(small, 0.001)
        print(f"wrote {size / 1e9:.2f} GB of rollouts ({steps} steps) in "
              f"{time.perf_counter() - began:.0f} s; the peer page: {small_size / 1e6:.1f} MB "
              f"({small_steps} steps)", flush=True)
        subprocess.run(["sync"], check=False)
        peer = full_read_seconds(big / "rollouts.jsonl")
        print(f"reading and parsing the whole file: {peer:.1f} s", flush=True)
        os.environ.setdefault("PYTHONPATH", str(ROOT / "src"))
        big_times, small_times = measure([(big, steps), (small, small_steps)], args.repeats)
    for name, times in (("1 GB run", big_times), ("small run", small_times)):
        for key, values in times.items():
            print(f"{name:9s} {key:6s} " + ", ".join(f"{v:.2f}" for v in values) + " s")
    print(f"view: {size / 1e9:.2f} GB rollouts ({steps} steps x {ATTEMPTS} attempts): attempts "
          f"shown in {spread(big_times['shown'])}, curves in {spread(big_times['curves'])}, "
          f"another step in {spread(big_times['step'])}, curves on a second visit in "
          f"{spread(big_times['revisit'])}; a {small_size / 1e6:.0f} MB run: "
          f"{statistics.median(small_times['shown']):.2f} / "
          f"{statistics.median(small_times['curves']):.2f} / "
          f"{statistics.median(small_times['step']):.2f} s; reading the whole file takes "
          f"{peer:.1f} s (median of {args.repeats} first visits)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
