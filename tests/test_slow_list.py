"""The slow list names tests that exist: a renamed or deleted test must leave it, or
`make test-fast` would silently start running it again."""

from __future__ import annotations

import ast

from conftest import REPO, slow_tests


def test_every_listed_slow_test_exists():
    missing = []
    for entry in sorted(slow_tests()):
        path, _, name = entry.partition("::")
        if not name:  # a whole file
            if not (REPO / path).exists():
                missing.append(entry)
            continue
        tree = ast.parse((REPO / path).read_text()) if (REPO / path).exists() else None
        names = {node.name for node in ast.walk(tree)
                 if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))} if tree else set()
        if name not in names:
            missing.append(entry)
    assert missing == []
