"""Imports point down: every rlvr module's imports (parsed, not run; function-level and
TYPE_CHECKING imports included) obey the layer rules of docs/ARCHITECTURE.md."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src" / "rlvr"
DOC = Path(__file__).resolve().parent.parent / "docs" / "ARCHITECTURE.md"

# package -> the other rlvr packages it may import. A "package.module" entry allows only
# that module (and the package's __init__ when it is listed as "package").
ALLOWED: dict[str, set[str]] = {
    "__main__": {"cli"},
    "cli": {"training", "evaluation", "audit", "view", "serve", "rollout", "data", "models",
            "verifiers", "runs", "config", "textsafe"},
    "training": {"update_paths", "evaluation", "audit", "environments", "episodes", "rollout", "rollout.base",
                 "rollout.factory", "data", "models", "algorithms", "verifiers", "runs",
                 "distributed", "serve",
                 "config"},
    "evaluation": {"rollout", "rollout.base", "data", "models", "verifiers", "config",
                   "textsafe"},
    # serve.*: rlvr's OpenEnv server (environments/ecosystem) follows rlvr serve's access rules
    "environments": {"episodes", "verifiers", "data", "textsafe", "serve.access",
                     "serve.listen", "serve.settings"},
    "episodes": {"rollout.base", "data", "verifiers"},
    "update_paths": {"accel", "models", "algorithms", "config"},
    "rollout": {"accel", "models"},
    "accel": {"rollout.base", "models", "algorithms"},
    "data": {"verifiers", "models", "runs.jsonl"},
    "models": {"config"},
    "adapters": {"verifiers", "serve"},
    "audit": {"runs", "textsafe", "mathtext"},
    "view": {"audit", "runs", "serve.listen", "serve.access", "serve.transport", "textsafe"},
    "serve": {"verifiers", "rollout.http_json"},
    "algorithms": set(),
    "distributed": set(),
    "verifiers": {"textsafe", "mathtext"},
    "runs": {"textsafe"},
    "config": set(),
    "textsafe": set(),
    "mathtext": set(),
    "errors": set(),
}

# Leaves every package may import, not repeated in each rule: the error bases.
EVERYONE = {"errors"}


def _imports(source: str) -> set[str]:
    """Every rlvr module `source` imports, as dotted names without the 'rlvr.' prefix."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            # `from rlvr.rollout import hf` imports the module rlvr.rollout.hf too
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names
                                     if (SRC.parent.joinpath(*node.module.split("."), a.name)
                                         .with_suffix(".py").exists())]
        else:
            continue
        found.update(n.removeprefix("rlvr.") for n in names if n.startswith("rlvr."))
    return found


def _allowed(package: str, target: str) -> bool:
    """A rule "pkg" allows all of pkg, unless the package also has "pkg.module" rules:
    then only those modules (and pkg's __init__, when "pkg" is listed)."""
    rules, top = ALLOWED[package] | EVERYONE, target.split(".")[0]
    modules = {r for r in rules if r.startswith(top + ".")}
    if not modules:
        return top in rules
    return (target == top and top in rules) or any(
        target == m or target.startswith(m + ".") for m in modules)


def _check(relative: Path, source: str) -> list[str]:
    package = relative.parts[0].removesuffix(".py")
    assert package in ALLOWED, f"{package}: a new package needs a layer rule here"
    return [f"{relative.as_posix()}: imports rlvr.{target}" for target in sorted(_imports(source))
            if target.split(".")[0] != package and not _allowed(package, target)]


def _violations() -> list[str]:
    return [bad for path in sorted(SRC.rglob("*.py"))
            if path.relative_to(SRC).parts != ("__init__.py",)
            for bad in _check(path.relative_to(SRC), path.read_text())]


def test_imports_point_down():
    assert _violations() == []


def test_training_sees_only_the_rollout_protocol_and_factory():
    """training/ builds engines through the factory and programs against the protocol;
    the kept activations' format, the decode and its kernels are not its business."""
    for path in sorted((SRC / "training").rglob("*.py")):
        rollout = {t for t in _imports(path.read_text()) if t.split(".")[0] == "rollout"}
        assert rollout <= {"rollout", "rollout.base", "rollout.factory"}, path.name


def test_the_checker_catches_upward_and_inner_imports():
    assert _check(Path("rollout/probe.py"),
                  "from rlvr.training.loop import rl_step\nimport rlvr.rollout.hf\n") == [
        "rollout/probe.py: imports rlvr.training.loop"]
    # a function-level import of a rollout internal from training
    assert _check(Path("training/probe.py"),
                  "def f():\n    from rlvr.rollout import hf, base\n") == [
        "training/probe.py: imports rlvr.rollout.hf"]
    # the accelerators only behind their seams: not from the trainer
    assert _check(Path("training/probe.py"), "from rlvr.accel.decode import capture\n") == [
        "training/probe.py: imports rlvr.accel.decode",
        "training/probe.py: imports rlvr.accel.decode.capture"]
    assert _check(Path("algorithms/probe.py"), "import rlvr.models.families\n") == [
        "algorithms/probe.py: imports rlvr.models.families"]
    assert _check(Path("training/probe.py"), "from rlvr.rollout.factory import build_engine\n"
                  "from rlvr.update_paths import UpdatePath\n") == []


def test_architecture_doc_states_these_rules():
    """The doc's layer table lists the same allowed imports (so its claims are checked)."""
    text = DOC.read_text()
    block = text[text.index("<!-- layer-rules -->"):text.index("<!-- /layer-rules -->")]
    stated = {}
    for line in block.splitlines():
        match = re.match(r"\s*(\S+)\s+->\s+(.*)$", line)
        if match:
            targets = match.group(2).strip()
            stated[match.group(1)] = set() if targets == "(none)" else set(targets.split())
    assert stated == ALLOWED
