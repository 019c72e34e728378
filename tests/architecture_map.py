"""The package table of docs/ARCHITECTURE.md, generated from what the layer test reads:
one row per layer rule (`<!-- layer-rules -->`, the block tests/test_import_layers.py
checks against the code), with the package's purpose taken from the first sentence of
its docstring. tests/test_architecture_map.py fails when the committed table differs;
rewrite it with

    PYTHONPATH=src python tests/architecture_map.py --write
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ARCHITECTURE.md"
SRC = ROOT / "src" / "rlvr"
BEGIN, END = "<!-- package-table -->", "<!-- /package-table -->"


def block(text: str, name: str) -> str:
    return text[text.index(f"<!-- {name} -->"):text.index(f"<!-- /{name} -->")]


def layer_rules(text: str) -> list[tuple[str, list[str]]]:
    """(package, allowed imports) in the doc's order, parsed as the layer test parses."""
    rules = []
    for line in block(text, "layer-rules").splitlines():
        match = re.match(r"\s*(\S+)\s+->\s+(.*)$", line)
        if match:
            targets = match.group(2).strip()
            rules.append((match.group(1), [] if targets == "(none)" else targets.split()))
    return rules


def source_of(package: str) -> Path:
    """The file whose docstring says what `package` is for: its __init__, or the module."""
    folder = SRC / package
    return folder / "__init__.py" if folder.is_dir() else SRC / f"{package}.py"


def purpose(package: str) -> str:
    path = source_of(package)
    doc = ast.get_docstring(ast.parse(path.read_text("utf-8")))
    if not doc:
        raise SystemExit(f"{path.relative_to(ROOT)}: no docstring to say what "
                         f"rlvr.{package} is for (the package table reads it)")
    first = " ".join(doc.split("\n\n")[0].split())
    sentence = re.split(r"(?<=[.!?])\s", first, maxsplit=1)[0]
    return sentence.replace("|", "\\|")


def table(text: str) -> str:
    rows = ["| package | where | what it is for | may import |", "|---|---|---|---|"]
    for package, allowed in layer_rules(text):
        where = source_of(package).relative_to(ROOT / "src")
        where = where.parent if where.name == "__init__.py" else where
        imports = ", ".join(f"`{a}`" for a in allowed) or "nothing"
        rows.append(f"| `{package}` | `{where.as_posix()}` | {purpose(package)} | {imports} |")
    return "\n".join(rows)


def rendered(text: str) -> str:
    """`text` with the package table between its markers regenerated."""
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return f"{text[:start]}\n{table(text)}\n{text[end:]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the table in place")
    args = parser.parse_args()
    text = DOC.read_text("utf-8")
    new = rendered(text)
    if args.write:
        DOC.write_text(new, "utf-8")
    elif new != text:
        print(f"{DOC.relative_to(ROOT)}: the package table is stale (run with --write)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
