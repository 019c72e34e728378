"""rlvr train with asynchronous rollouts runs with OMP_WAIT_POLICY=PASSIVE (the trainer's
OpenMP threads then sleep instead of spinning while a producer holds their core):
rlvr.cli.train._passive_openmp, with execv recorded instead of run."""

from __future__ import annotations

import sys
from types import SimpleNamespace

import pytest

from rlvr.cli import train as train_cli


def _cfg(k: int) -> SimpleNamespace:
    return SimpleNamespace(rollout=SimpleNamespace(asynchronous=k >= 1))


@pytest.fixture
def execs(monkeypatch):
    calls: list[tuple[str, list[str]]] = []
    monkeypatch.setattr(train_cli.os, "execv", lambda path, argv: calls.append((path, argv)))
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    argv = ["train", "--config", "my.yaml", "rollout.max_staleness=1"]
    monkeypatch.setattr(sys, "argv", ["rlvr", *argv])
    return calls, argv


def test_an_asynchronous_command_runs_again_with_passive_threads(execs, monkeypatch):
    calls, argv = execs
    train_cli._passive_openmp(_cfg(1), SimpleNamespace(argv=argv))  # torch is loaded here
    assert train_cli.os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    assert calls == [(sys.executable, [sys.executable, "-m", "rlvr", *argv])]


def test_nothing_changes_for_a_synchronous_run_the_operators_setting_or_a_program(
        execs, monkeypatch):
    calls, argv = execs
    train_cli._passive_openmp(_cfg(0), SimpleNamespace(argv=argv))
    assert "OMP_WAIT_POLICY" not in train_cli.os.environ
    # main([...]) from a program whose own command line is something else
    train_cli._passive_openmp(_cfg(1), SimpleNamespace(argv=["train", "other"]))
    assert "OMP_WAIT_POLICY" not in train_cli.os.environ
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    train_cli._passive_openmp(_cfg(1), SimpleNamespace(argv=argv))
    assert train_cli.os.environ["OMP_WAIT_POLICY"] == "ACTIVE" and calls == []
