"""rlvr's math verifier on math-verify's own test cases: the peer proxy.

math-verify's public test files hold (gold, prediction, expected) triples in
`@pytest.mark.parametrize("gold,pred,expected", [...])` blocks (some with settings of
their own after the three, which rlvr has no use for: its defaults grade every case).
This script reads them from a checkout the operator names (nothing is fetched, and
nothing of it is copied into this repository), takes each triple's literals with
`ast.literal_eval` (the files are parsed, never run), grades `pred` against `gold` with
rlvr's defaults, and prints the agreement with `expected` and the false positives (pred
paid where expected is 0).

Run: git clone https://github.com/huggingface/Math-Verify /tmp/Math-Verify
     PYTHONPATH=src python -m benchmarks.verifiers.bench_math_peer_cases /tmp/Math-Verify/tests
Prints `peer cases: N triples, agreement A, correct answers paid P/Q, false positives F/G`
and, with --show, each disagreement.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

from rlvr.verifiers.base import InvalidReference
from rlvr.verifiers.math.verifier import MathVerifier

ARGNAMES = ["gold", "pred", "expected"]  # first; a case may add its own settings after


def _triples(tree: ast.AST, path: Path) -> list[tuple[str, str, bool]]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            if not (isinstance(decorator, ast.Call) and len(decorator.args) >= 2
                    and getattr(decorator.func, "attr", "") == "parametrize"):
                continue
            names = decorator.args[0]
            if not (isinstance(names, ast.Constant) and
                    str(names.value).replace(" ", "").split(",")[:3] == ARGNAMES):
                continue
            if not isinstance(decorator.args[1], (ast.List, ast.Tuple)):
                raise SystemExit(f"{path}:{decorator.lineno}: parametrize values are not a "
                                 "literal list")
            for element in decorator.args[1].elts:
                try:
                    gold, pred, expected = ast.literal_eval(element)[:3]
                except (ValueError, TypeError, SyntaxError):
                    continue  # a pytest.param(...) or computed case: not a plain triple
                found.append((str(gold), str(pred), bool(expected)))
    return found


def read_cases(tests_dir: Path) -> list[tuple[str, str, bool]]:
    """Every (gold, pred, expected) literal triple of the test files under `tests_dir`."""
    files = sorted(tests_dir.glob("test_*.py"))
    if not files:
        raise SystemExit(f"{tests_dir}: no test_*.py files (expected math-verify's tests/)")
    cases = []
    for path in files:
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        except SyntaxError as error:
            raise SystemExit(f"{path}:{error.lineno}: not Python: {error.msg}") from None
        cases += _triples(tree, path)
    return cases


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests_dir", type=Path, help="math-verify's tests/ directory")
    parser.add_argument("--show", action="store_true", help="print each disagreement")
    args = parser.parse_args(argv)
    cases = read_cases(args.tests_dir)
    verifier = MathVerifier()
    agree = paid = false_positives = 0
    for gold, pred, expected in cases:
        try:
            verdict = verifier.verify(pred, gold)
            passed, reason = verdict.passed, verdict.reason
        except InvalidReference:
            passed, reason = False, "invalid_reference"
        agree += passed is expected
        paid += passed and expected
        false_positives += passed and not expected
        if args.show and passed is not expected:
            print(f"  expected {int(expected)}, got {reason}: gold {gold[:60]!r} pred "
                  f"{pred[-80:]!r}")
    positives = sum(expected for _, _, expected in cases)
    print(f"peer cases: {len(cases)} triples, agreement {agree / max(1, len(cases)):.3f}, "
          f"correct answers paid {paid}/{positives}, false positives "
          f"{false_positives}/{len(cases) - positives}")


if __name__ == "__main__":
    main(sys.argv[1:])
