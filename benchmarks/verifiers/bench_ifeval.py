"""Verdicts/s of the "ifeval" verifier over all 541 IFEval prompts with synthetic
responses (no model): strict and loose in one process, and strict through a
VerifierPool (worker processes, time limits), with the "exact" verifier through the
same pool as the peer that shows the pool's own per-item cost. Medians of --repeats
runs; ratios are against that peer, measured in the same run.

    PYTHONPATH=src python -m benchmarks.verifiers.bench_ifeval [--repeats 5] [--workers 2]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path

from rlvr.data.sources import shared_data_dir
from rlvr.verifiers import Case, VerifierPool
from rlvr.verifiers.ifeval import IfevalVerifier

WORDS = ("the model writes a clear answer about history science travel music and food "
         "with several ideas that follow one another in order").split()


def data_file() -> Path:
    return shared_data_dir() / "ifeval" / "input_data.jsonl"


def synthetic_response(row: dict, rng: random.Random) -> str:
    """A response of 3-6 paragraphs shaped at random by the row's instruction ids, so
    some instructions are followed and some are not (the checks run their full paths)."""
    paragraphs = []
    for _ in range(rng.randint(3, 6)):
        sentences = [" ".join(rng.choices(WORDS, k=rng.randint(6, 16))).capitalize() + "."
                     for _ in range(rng.randint(2, 5))]
        paragraphs.append(" ".join(sentences))
    ids = " ".join(row["instruction_id_list"])
    if "title" in ids and rng.random() < 0.7:
        paragraphs.insert(0, "<<A Synthetic Title>>")
    if "bullet" in ids:
        paragraphs.append("\n".join(f"* point {i}" for i in range(rng.randint(1, 5))))
    if "comma" not in ids or rng.random() < 0.3:
        paragraphs[-1] += " First, second, third."
    if "postscript" in ids and rng.random() < 0.7:
        paragraphs.append("P.S. one more thing.")
    text = ("\n***\n" if "number_paragraphs" in ids else "\n\n").join(paragraphs)
    if "english_capital" in ids and rng.random() < 0.7:
        text = text.upper()
    if "english_lowercase" in ids and rng.random() < 0.7:
        text = text.lower()
    if "json_format" in ids and rng.random() < 0.5:
        text = json.dumps({"answer": text})
    if "quotation" in ids and rng.random() < 0.7:
        text = f'"{text}"'
    return text


def interleaved_rates(runs: dict, n: int, repeats: int) -> dict[str, float]:
    """Items/s of each run, median over `repeats` rounds; every round times each run
    once, in turn, so a change of load on the shared machine hits all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeats):
        for name, fn in runs.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: n / statistics.median(t) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    rows = [json.loads(line) for line in data_file().read_text().splitlines()]
    rng = random.Random(0)
    responses = [synthetic_response(row, rng) for row in rows]
    strict, loose = IfevalVerifier(), IfevalVerifier(loose=True)
    strict.verify(responses[0], rows[0])  # load langdetect's profiles outside the timing

    ifeval_cases = [Case("ifeval", r, row) for r, row in zip(responses, rows)]
    exact_cases = [Case("exact", "#### 42", "42") for _ in rows]
    pool_name = f"VerifierPool({args.workers})"
    with VerifierPool(workers=args.workers, preload=("ifeval", "exact")) as pool:
        pool.start()
        pool.verify(ifeval_cases)  # every worker loads punkt and langdetect before timing
        results = interleaved_rates({
            "ifeval strict, in-process": lambda: [strict.verify(r, row) for r, row in
                                                  zip(responses, rows)],
            "ifeval loose, in-process": lambda: [loose.verify(r, row) for r, row in
                                                 zip(responses, rows)],
            f"ifeval strict, {pool_name}": lambda: pool.verify(ifeval_cases),
            f"exact (peer), {pool_name}": lambda: pool.verify(exact_cases),
        }, len(rows), args.repeats)
    peer = results[f"exact (peer), {pool_name}"]
    passed = sum(strict.verify(r, row).passed for r, row in zip(responses, rows))
    print(f"{len(rows)} prompts, {sum(len(r['instruction_id_list']) for r in rows)} instructions; "
          f"{passed} synthetic responses pass strict; median of {args.repeats} runs")
    print(f"{'what':42s} {'verdicts/s':>11s} {'vs peer':>8s}")
    for name, value in results.items():
        print(f"{name:42s} {value:11.0f} {value / peer:8.2f}")


if __name__ == "__main__":
    main()
