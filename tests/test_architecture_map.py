"""docs/ARCHITECTURE.md's package table is what tests/architecture_map.py generates
from the layer rules and the package docstrings, and it names every package in src/."""

from __future__ import annotations

import architecture_map as amap


def test_the_committed_table_is_the_generated_one():
    text = amap.DOC.read_text("utf-8")
    assert amap.rendered(text) == text, (
        "stale package table: PYTHONPATH=src python tests/architecture_map.py --write")


def test_every_package_and_top_level_module_has_a_row():
    on_disk = {p.name for p in amap.SRC.iterdir()
               if p.is_dir() and any(p.glob("*.py"))}
    on_disk |= {p.stem for p in amap.SRC.glob("*.py") if p.name != "__init__.py"}
    table = amap.block(amap.DOC.read_text("utf-8"), "package-table")
    rows = {line.split("|")[1].strip(" `") for line in table.splitlines()
            if line.startswith("| `")}
    assert rows == on_disk
    assert {"audit", "distributed", "accel", "errors", "textsafe"} <= rows


def test_a_new_rule_becomes_a_row_with_its_docstring():
    text = amap.DOC.read_text("utf-8")
    grown = text.replace("textsafe      -> (none)", "textsafe      -> errors")
    row = next(line for line in amap.table(grown).splitlines() if line.startswith("| `textsafe`"))
    assert row == ("| `textsafe` | `rlvr/textsafe.py` | Untrusted text made safe to write: one "
                   "lossless escape, and a JSON line that never fails on text. | `errors` |")


def test_the_purpose_is_the_first_sentence_of_the_first_paragraph():
    assert amap.purpose("runs") == ("The run directory: config.yaml, metrics.jsonl, "
                                    "rollouts.jsonl, checkpoints/, summary.json.")
    assert amap.purpose("models").endswith("packages carry.")  # the next sentence is cut


def test_the_package_docstring_orders_the_layers_as_the_rules_do():
    """rlvr/__init__.py's one-line layer order agrees with every layer rule: each
    allowed import points right, but for the two modules it names as reached from below."""
    import ast
    import re

    doc = ast.get_docstring(ast.parse((amap.SRC / "__init__.py").read_text("utf-8")))
    chain = re.search(r"\n\s+(cli >.*?errors)\n", doc, re.S).group(1)
    order = [name.strip() for name in chain.split(">")]
    rules = dict(amap.layer_rules(amap.DOC.read_text("utf-8")))
    assert set(order) == set(rules) - {"__main__"}
    upward = sorted(f"{package} -> {target}" for package in order for target in rules[package]
                    if order.index(target.split(".")[0]) <= order.index(package))
    assert upward == ["accel -> rollout.base", "serve -> rollout.http_json"]
