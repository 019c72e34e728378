"""The newcomer's path through one GRPO step (docs/ARCHITECTURE.md, `newcomer-path`)
stays short and off the accelerators: the doc's own command is parsed and its files
counted here, so the stated bound is checked."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "ARCHITECTURE.md"


def _listed_files() -> list[Path]:
    text = DOC.read_text()
    block = text[text.index("<!-- newcomer-path -->"):text.index("<!-- /newcomer-path -->")]
    command = re.search(r"cd src/rlvr && wc -l (.*?) \| tail -1", block).group(1)
    return [ROOT / "src" / "rlvr" / name for name in command.split()]


def test_the_path_is_at_most_4000_lines_and_leaves_out_the_accelerators():
    files = _listed_files()
    assert len(files) >= 10 and all(path.is_file() for path in files)
    names = {path.relative_to(ROOT / "src" / "rlvr").as_posix() for path in files}
    # the steps the path must cover: CLI, loop, objective, plain engine, pool, a verifier
    assert {"cli/train.py", "training/loop.py", "algorithms/objective.py", "rollout/hf.py",
            "verifiers/pool.py", "verifiers/exact.py"} <= names
    assert not any(name.startswith("accel/") for name in names)
    lines = sum(path.read_bytes().count(b"\n") for path in files)  # what `wc -l` counts
    assert lines <= 4000, lines
