"""The CLI's shared frame: one parser helper, one set of exit codes, two error bases."""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path

import pytest

from rlvr.cli import exit_codes, main
from rlvr.errors import ExternalFault, UserError

CLI = Path(__file__).resolve().parent.parent / "src" / "rlvr" / "cli"


def test_each_code_is_named_once_with_its_documented_meaning():
    codes = {name: value for name, value in vars(exit_codes).items() if name.isupper()}
    assert codes == {"OK": 0, "FOUND": 1, "BAD_INPUT": 2, "FAULT": 3}
    for name, value in codes.items():
        assert f"    {value}  {name}" in exit_codes.__doc__


def _modules():
    return [p for p in sorted(CLI.glob("*.py")) if p.name not in ("__init__.py",)]


def test_commands_use_the_frame_not_their_own_copies():
    """No command module defines an exit constant, returns a bare 1/2/3, builds its
    subparser itself or takes its parser from another command."""
    for path in _modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and path.name != "exit_codes.py":
                names = [t.id for t in node.targets if isinstance(t, ast.Name)]
                assert not [n for n in names if n.startswith("EXIT_")], (path.name, names)
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Constant):
                assert node.value.value not in (1, 2, 3), (path.name, node.lineno)
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "add_parser" and path.name not in ("common.py",
                                                                            "main.py")):
                pytest.fail(f"{path.name}:{node.lineno}: use rlvr.cli.common.command_parser")
            if isinstance(node, ast.ImportFrom) and node.module == "rlvr.cli.train":
                pytest.fail(f"{path.name} imports from rlvr.cli.train")


def _fake_command(monkeypatch, error: BaseException) -> None:
    module = types.ModuleType("rlvr_fake_command")
    module.add_parser = lambda sub, name, help_text: sub.add_parser(name, help=help_text)

    def run(args):
        raise error

    module.run = run
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(main.COMMANDS, "fake", (module.__name__, "a test command"))


@pytest.mark.parametrize("error,code", [(UserError("cfg.yaml:3: bad field"), 2),
                                        (ExternalFault("disk full writing step 4"), 3)])
def test_uncaught_user_errors_and_faults_become_exit_codes(monkeypatch, capsys, error, code):
    _fake_command(monkeypatch, error)
    assert main.main(["fake"]) == code
    assert capsys.readouterr().err == f"rlvr fake: {error}\n"


def test_any_other_error_is_a_bug_and_keeps_its_traceback(monkeypatch):
    _fake_command(monkeypatch, KeyError("bug"))
    with pytest.raises(KeyError):
        main.main(["fake"])


def test_module_errors_derive_from_the_right_base():
    from rlvr.audit.rundata import RunDataError
    from rlvr.config import ConfigError
    from rlvr.data.loading import DataError
    from rlvr.data.prompts import PromptError
    from rlvr.evaluation.datasets import DatasetError
    from rlvr.evaluation.model_source import ModelSourceError
    from rlvr.models.resolve import ModelNotFound
    from rlvr.runs import JsonlError, RunLogError
    from rlvr.runs.trackers.fanout import TrackerError
    from rlvr.runs.verifier import RunConfigError
    from rlvr.serve.app import ServeDependencyError
    from rlvr.serve.client import ServeError
    from rlvr.training.checkpoint import CheckpointError
    from rlvr.training.run import ResumeError
    from rlvr.verifiers.base import InvalidReference
    from rlvr.verifiers.contract import CaseError
    from rlvr.verifiers.untrusted import Refused
    from rlvr.view.page import ViewDependencyError

    user = [RunDataError, ConfigError, DataError, PromptError, DatasetError, ModelSourceError,
            ModelNotFound, JsonlError, RunLogError, RunConfigError, ServeDependencyError,
            ResumeError, InvalidReference, CaseError, Refused, ViewDependencyError]
    faults = [TrackerError, ServeError, CheckpointError]
    for cls in user:
        assert issubclass(cls, UserError) and not issubclass(cls, ExternalFault), cls
    for cls in faults:
        assert issubclass(cls, ExternalFault) and not issubclass(cls, UserError), cls
    # the builtin each always was stays a base, so older `except ValueError` still work
    assert issubclass(ConfigError, ValueError) and issubclass(ModelNotFound, FileNotFoundError)
    assert issubclass(CheckpointError, RuntimeError)
