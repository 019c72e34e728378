"""No test names a verifier plugin that lives in a test module. A plugin stays registered
in the pytest process (rlvr.verifiers.registry.add_plugins), so every verifier worker
started later in the session imports its module too; a test module imports torch and the
trainer (~5 s a worker), which made every later run of that xdist worker several times
slower. Test plugins live in the light *_helpers modules (train_helpers, fault_helpers)."""

from __future__ import annotations

import re
from pathlib import Path

TESTS = Path(__file__).resolve().parent
# "module:Class" where the module is a test file (test_x.py::name, a node id, is not)
PLUGIN_IN_TEST_MODULE = re.compile(r"(?<![\w/.])(test_\w+):[A-Za-z_]")


def offenders(text: str) -> list[str]:
    return [m.group(0) for m in PLUGIN_IN_TEST_MODULE.finditer(text)]


def test_the_pattern_finds_a_test_module_plugin_and_not_a_node_id():
    assert offenders('"reward.plugins=[test_train_x:Grader]"') == ["test_train_x:G"]
    assert offenders("tests/test_train_x.py::test_y and test_train_x.py::z") == []


def test_no_test_module_is_a_verifier_plugin():
    found = {path.name: offenders(path.read_text(encoding="utf-8"))
             for path in sorted(TESTS.glob("*.py")) if path.name != Path(__file__).name}
    assert {name: hits for name, hits in found.items() if hits} == {}
