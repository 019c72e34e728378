"""Environment names -> factories. The operator's config chooses one by name
(`episodes.environment`, with `episodes.options`); a dataset row never does.

A factory is `factory(record, options, limits) -> Environment`, called once per episode
(a fresh environment each time: no state is shared between episodes). `check_environment`
is what the config loader calls: an unknown name or a bad option is a UserError naming
the field, before any model loads. `environment_factory` binds the name, the options and
the limits into the `make_env(record)` the episode runner takes.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable

from rlvr.data.records import TaskRecord
from rlvr.environments import code_feedback, guess_number, python_tool
from rlvr.environments.ecosystem import openenv_client, verifiers_env
from rlvr.environments.options import parse_options
from rlvr.environments.tools import supports_tool_role
from rlvr.episodes import single_turn
from rlvr.episodes.base import Environment, EpisodeLimits
from rlvr.errors import UserError

Factory = Callable[[TaskRecord, dict[str, Any], EpisodeLimits], Environment]


class UnknownEnvironment(UserError, KeyError):
    """`episodes.environment` names no registered environment."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True)
class EnvironmentSpec:
    """name: the registry name; factory: one fresh environment per episode; options: the
    dataclass its options are read into (None: it takes none); summary: one line; check:
    see below."""

    name: str
    factory: Factory
    options: type | None
    summary: str
    # a further check of the options the config loader runs (a UserError naming the
    # field): what a dataclass cannot say, e.g. that a token variable is set
    check: Callable[[dict[str, Any] | None], Any] | None = None


_REGISTRY: dict[str, EnvironmentSpec] = {}


def register(spec: EnvironmentSpec) -> None:
    """Add an environment (code the operator's own program runs, never data)."""
    if spec.name in _REGISTRY:
        raise ValueError(f"environment {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec


def known() -> list[str]:
    return sorted(_REGISTRY)


def get_spec(name: str) -> EnvironmentSpec:
    if not isinstance(name, str) or name not in _REGISTRY:
        raise UnknownEnvironment(f"episodes.environment: unknown environment {name!r} "
                                 f"(known: {', '.join(known())})")
    return _REGISTRY[name]


def check_environment(name: str, options: dict[str, Any] | None) -> None:
    """UserError naming the field when `name` or `options` cannot make an environment."""
    spec = get_spec(name)
    if spec.options is not None:
        parsed = parse_options(spec.options, options, name)
        if getattr(parsed, "sandbox", None) == "bwrap":
            _check_sandbox()
    elif options:
        raise UserError(f"episodes.options: environment {name!r} takes no options, got "
                        f"{', '.join(map(str, options))}")
    if spec.check is not None:
        spec.check(options)


def _check_sandbox() -> None:
    """An environment that runs code needs the code sandbox: say so at config time
    rather than end every episode with an environment error."""
    from rlvr.verifiers.code.sandbox import SandboxUnavailable, probe

    try:
        probe()  # cached after the first call
    except SandboxUnavailable as exc:
        raise UserError(f"episodes.options.sandbox: {exc}") from None


def resolve_options(name: str, options: dict[str, Any] | None,
                    chat_template: str | None = None) -> dict[str, Any]:
    """The options with `tool_role: auto` (an environment with tools) decided by the
    chat template: "tool" when it renders that role, else "user"."""
    spec = get_spec(name)
    resolved = dict(options or {})
    declared = {f.name for f in fields(spec.options)} if spec.options else set()
    if "tool_role" in declared:
        default = parse_options(spec.options, resolved, name)
        if default.tool_role == "auto":
            resolved["tool_role"] = "tool" if supports_tool_role(chat_template) else "user"
    return resolved


def environment_factory(name: str, options: dict[str, Any] | None, limits: EpisodeLimits,
                        chat_template: str | None = None) -> Callable[[TaskRecord], Environment]:
    """`make_env(record)` for the runner: checked now, one fresh environment per call."""
    check_environment(name, options)
    spec, resolved = get_spec(name), resolve_options(name, options, chat_template)

    def make_env(record: TaskRecord) -> Environment:
        return spec.factory(record, dict(resolved), limits)

    return make_env


for _spec in (
    EnvironmentSpec("single_turn", single_turn.single_turn, None,
                    "one prompt, one answer, graded by the run's verifier (the default)"),
    EnvironmentSpec(guess_number.NAME, guess_number.make, guess_number.GuessNumberOptions,
                    "find a hidden integer from higher/lower hints"),
    EnvironmentSpec(code_feedback.NAME, code_feedback.make, code_feedback.CodeFeedbackOptions,
                    "write code; failing tests' output comes back; up to K attempts"),
    EnvironmentSpec(python_tool.NAME, python_tool.make, python_tool.PythonToolOptions,
                    "math with a sandboxed python tool; the last message is graded"),
    EnvironmentSpec(openenv_client.NAME, openenv_client.make, openenv_client.OpenEnvOptions,
                    "any OpenEnv environment server (pip install 'rlvr[openenv]')",
                    openenv_client.parse_options),
    EnvironmentSpec(verifiers_env.NAME, verifiers_env.make, verifiers_env.VerifiersOptions,
                    "a verifiers library environment: its rows, its rubric "
                    "(pip install 'rlvr[verifiers]')", verifiers_env.check_options),
):
    register(_spec)
