"""rlvr's benchmarks, a package run from the repository root with `python -m`
(benchmarks/README.md): `PYTHONPATH=src python -m benchmarks.headline.bench_vs_trl`.
Subpackages by purpose: headline (rlvr against a peer trainer, learning, reward
hacking), verifiers (throughput and accuracy of the graders and the grading service),
kernels (CPU micro-benchmarks of the accelerators), systems (distributed training,
the vLLM engine, the run viewer) and tools (helpers and one-off utilities the others
and the tests import). Results land in benchmarks/results/ (RESULTS below)."""

from __future__ import annotations

from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
REPO = BENCHMARKS.parent
RESULTS = BENCHMARKS / "results"


def use_test_helpers() -> None:
    """Make tests/'s helper modules (view_helpers, audit_fixtures) importable. tests/ is
    not a package (pytest imports its files by rootdir), so the two benchmarks that
    drive the run viewer with the tests' browser and fixture helpers add it here, the
    one place a benchmark touches sys.path."""
    import sys

    if str(REPO / "tests") not in sys.path:
        sys.path.insert(0, str(REPO / "tests"))
