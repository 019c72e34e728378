"""Docstrings cite documents that exist in this repository: docs/*.md files that are
here, never the design notes outside it (../shared/DESIGN.md, whose contracts are kept
in docs/contracts.md)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCES = sorted([*(ROOT / "src").rglob("*.py"), *(ROOT / "tests").glob("*.py"),
                  *(ROOT / "benchmarks").rglob("*.py")])


def test_no_source_cites_the_design_notes_outside_the_repository():
    citing = [str(p.relative_to(ROOT)) for p in SOURCES
              if p.name != Path(__file__).name and "DESIGN.md" in p.read_text("utf-8")]
    assert citing == []


def test_every_cited_doc_exists():
    cited = {(p.relative_to(ROOT), m) for p in SOURCES
             for m in re.findall(r"\bdocs/[\w.-]+\.md\b", p.read_text("utf-8"))}
    assert cited, "expected docstrings to cite docs/*.md"
    missing = sorted((str(p), doc) for p, doc in cited if not (ROOT / doc).is_file())
    assert missing == []
