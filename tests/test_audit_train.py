"""The audit on a real (tiny) `rlvr train` run: the trainer's every-N-steps warning, and
`rlvr audit` on the run directory it wrote."""

from __future__ import annotations

import json
import os
from pathlib import Path

from audit_fixtures import read_jsonl
from cli_helpers import run_cli
from train_helpers import TINY_OVERRIDES, plugin_reward


def test_trainer_warns_and_rlvr_audit_flags_a_real_run(tmp_path, monkeypatch):
    # Every attempt passes with the graded answer "1+2" against the arithmetic task's
    # numeric references: an unevaluated expression in 8 of 8 passed attempts a step.
    tests_dir = str(Path(__file__).parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([tests_dir, os.environ.get("PYTHONPATH", "")]))
    run_dir = tmp_path / "run"
    result = run_cli("train", "--run-dir", str(run_dir), "steps=2", "audit_every=1",
                     "checkpoint_every=0", *plugin_reward("audit_fixtures:ArithmeticEchoVerifier"),
                     *TINY_OVERRIDES, timeout=240)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("audit warning")]
    assert len(warnings) == 2, result.stderr
    assert warnings[0].startswith("audit warning, step 1: unevaluated in 8 of 8 passed "
                                  "attempts (100%); e.g. step 1 prompt ")
    metrics = read_jsonl(run_dir / "metrics.jsonl")
    assert [m["audit/warnings"] for m in metrics] == [1, 1]

    out = tmp_path / "flagged.jsonl"
    audit = run_cli("audit", str(run_dir), "--out", str(out), "--json")
    assert audit.returncode == 1, audit.stderr
    report = json.loads(audit.stdout)
    assert report["verifier"] == "audit_fixtures:ArithmeticEchoVerifier"
    assert report["attempts"] == report["passed"] == 16 and "unevaluated" in report["raised"]
    flagged = read_jsonl(out)
    assert len(flagged) == 16 and all(f["flags"] == ["unevaluated"] for f in flagged)
    assert all(f["prompt"].endswith("=") for f in flagged)  # the arithmetic task's text
