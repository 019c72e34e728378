"""The short benchmark paths (`python benchmarks/bench_X.py`) run the module they name:
each entry point names a real module of the benchmarks package, and one started from
another directory reaches that module's own argument parser."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
ENTRY_POINTS = sorted((REPO / "benchmarks").glob("bench_*.py"))
NAMED = re.compile(r'run\("(?P<module>benchmarks\.[\w.]+)"')


def _target(entry: Path) -> str:
    match = NAMED.search(entry.read_text())
    assert match, f"{entry.name} runs no benchmarks module"
    return match.group("module")


def test_there_are_entry_points():
    assert {p.name for p in ENTRY_POINTS} >= {"bench_multiturn.py", "bench_default_run.py",
                                               "bench_redteam_sandbox.py"}


@pytest.mark.parametrize("entry", ENTRY_POINTS, ids=lambda p: p.name)
def test_each_entry_point_names_a_module_of_the_same_name(entry, monkeypatch):
    module = _target(entry)
    assert module.rsplit(".", 1)[1] == entry.stem
    monkeypatch.syspath_prepend(str(REPO))
    assert importlib.util.find_spec(module) is not None, module


def test_an_entry_point_reaches_its_module_from_another_directory(tmp_path):
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_multiturn.py"),
                           "--help"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    # the module's own parser and docstring, not the entry point's
    assert "--seed" in done.stdout and "guess_number" in done.stdout
