"""Does a remedy keep a real model improving where bench_hacking's strict run collapses?

bench_hacking's strict run (SmolLM2-135M-Instruct, arithmetic, the strict `math`
verifier, lr 2e-5, 4 prompts x 8 samples a step, seed 0) gains for 20 steps and then
collapses: entropy falls to ~0.1, most groups go uniform and held-out accuracy drops
(benchmarks/RESULTS.md, "Rewards the model can't fake"). This bench trains that run for
--steps steps twice from the same start, once as it is (PPO-clip with DAPO's clip-higher,
the config's loss) and once with the remedy, KL-Cov (Cui et al. 2025, arXiv:2505.22617:
a KL penalty on the few tokens whose log-prob/advantage covariance is largest;
rlvr.algorithms.cov_loss), and reports each run's held-out accuracy (greedy, strict
verifier) and policy entropy at every evaluation, and its collapse warnings.

    PYTHONPATH=src python -m benchmarks.headline.bench_collapse                 # 40 steps each
    PYTHONPATH=src python -m benchmarks.headline.bench_collapse --runs-root runs/collapse-1

A bench started again with the same --runs-root keeps the runs that finished. Last line:
`collapse remedy: base best B0 at step N0, final F0, warnings W0; REMEDY best B1 at step
N1, final F1, warnings W1` (--remedy: kl_cov, kl_cov_0.02 or kl_ref_0.1).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from benchmarks import REPO, RESULTS
from benchmarks.headline.bench_hacking import add_run_arguments, train

# Remedies by name: each a list of config overrides. The whole loss replaces the config's
# (its clip-higher option is PPO-clip's, not KL-Cov's).
REMEDIES = {
    # KL-Cov at the paper's 7B setting (ratio 2e-3) and the authors' implementation's beta
    "kl_cov": ("algorithm.policy_loss={name: kl_cov, ratio: 0.002, beta: 1.0}",),
    # the same with 10x the tokens: a step here has ~500-1000 valid tokens, so 2e-3
    # restrains one or two of them
    "kl_cov_0.02": ("algorithm.policy_loss={name: kl_cov, ratio: 0.02, beta: 1.0}",),
    # a KL penalty to the frozen start in the loss (k3 estimator; Schulman 2020's
    # approximation, as GRPO uses it: Shao et al. 2024, arXiv:2402.03300)
    "kl_ref_0.1": ("algorithm.kl_beta=0.1",),
}
REMEDY = REMEDIES["kl_cov"]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_arguments(p, steps=40)  # bench_hacking's strict run, 40 steps
    p.add_argument("--runs-root", default="", help="default: runs/collapse-TIMESTAMP")
    p.add_argument("--remedy", default="kl_cov", choices=sorted(REMEDIES),
                   help="the remedy run beside the base run (default kl_cov)")
    p.add_argument("--only-remedy", action="store_true",
                   help="train only the remedy run (the base run trained elsewhere, or later)")
    return p.parse_args(argv)


def curve(run: Path) -> list[dict[str, Any]]:
    """Per evaluation: step, held-out greedy accuracy, and the policy entropy of the
    step it followed (metrics.jsonl; none at step 0)."""
    entropy = {}
    for line in (run / "metrics.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            entropy[row["step"]] = row.get("entropy")
    rows = []
    for line in (run / "evals.jsonl").read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            rows.append({"step": row["step"], "accuracy": row["greedy/accuracy"],
                         "entropy": entropy.get(row["step"])})
    return rows


def verdict(rows: list[dict[str, Any]], summary: dict[str, Any]) -> dict[str, Any]:
    """Best held-out accuracy (earliest step on a tie), the final one, and the count of
    collapse warnings the run raised."""
    best = max(rows, key=lambda r: (r["accuracy"], -r["step"]))
    return {"best": best["accuracy"], "best_step": best["step"], "final": rows[-1]["accuracy"],
            "warnings": len(summary.get("collapse_warnings") or [])}


def remedy_line(base: dict[str, Any], remedy: dict[str, Any], name: str = "kl_cov") -> str:
    def part(name: str, v: dict[str, Any]) -> str:
        return (f"{name} best {v['best']:.3f} at step {v['best_step']}, final {v['final']:.3f}, "
                f"warnings {v['warnings']}")
    return f"collapse remedy: {part('base', base)}; {part(name, remedy)}"


def table(curves: dict[str, list[dict[str, Any]]]) -> list[str]:
    """One line per evaluation step: each run's accuracy and entropy."""
    steps = sorted({r["step"] for rows in curves.values() for r in rows})
    lines = ["step " + "".join(f"{name + ' acc / entropy':>26}" for name in curves)]
    for step in steps:
        cells = []
        for rows in curves.values():
            row = next((r for r in rows if r["step"] == step), None)
            ent = "-" if row is None or row["entropy"] is None else f"{row['entropy']:.3f}"
            cells.append("-" if row is None else f"{row['accuracy']:.3f} / {ent}")
        lines.append(f"{step:>4} " + "".join(f"{c:>26}" for c in cells))
    return lines


def main() -> None:
    args = parse_args()
    root = Path(args.runs_root or REPO / "runs" / f"collapse-{time.strftime('%Y%m%d-%H%M%S')}")
    root.mkdir(parents=True, exist_ok=True)
    remedy = train(root, args.remedy, args, *REMEDIES[args.remedy])
    if args.only_remedy:
        return
    runs = {"base": train(root, "base", args), args.remedy: remedy}
    curves = {name: curve(run) for name, run in runs.items()}
    verdicts = {name: verdict(curves[name], json.loads((run / "summary.json").read_text()))
                for name, run in runs.items()}
    print("\n".join(table(curves)))
    out = RESULTS / f"collapse-{time.strftime('%Y%m%d-%H%M')}.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "runs": {k: str(v) for k, v in runs.items()},
                               "curves": curves, "verdicts": verdicts}, indent=1) + "\n")
    print(f"results: {out}")
    print(remedy_line(verdicts["base"], verdicts[args.remedy], args.remedy))


if __name__ == "__main__":
    main()
