"""An environment's options: the operator's `episodes.options` mapping read into the
environment's own dataclass, with an error naming the field for anything wrong.

Options come from the run's config only (never from a dataset row), and are checked
when the config loads (`registry.check_environment`), before any model is loaded.
"""

from __future__ import annotations

from dataclasses import fields, is_dataclass
from typing import Any, Literal, Mapping, TypeVar, get_args, get_origin, get_type_hints

from rlvr.errors import UserError

T = TypeVar("T")
PREFIX = "episodes.options"


class OptionError(UserError, ValueError):
    """An environment option is unknown or has the wrong type or value; the message
    names the field (`episodes.options.<name>`)."""


def parse_options(cls: type[T], options: Mapping[str, Any] | None, environment: str) -> T:
    """`options` as an instance of the dataclass `cls`. Unknown names, wrong types and
    values the dataclass refuses (its __post_init__ raising ValueError) are OptionError."""
    assert is_dataclass(cls)
    options = {} if options is None else options
    if not isinstance(options, Mapping):
        raise OptionError(f"{PREFIX}: expected a mapping of option names to values, got "
                          f"{type(options).__name__}")
    declared = [f.name for f in fields(cls)]
    for name in options:
        if name not in declared:
            takes = ", ".join(declared) if declared else "no options"
            raise OptionError(f"{PREFIX}.{name}: environment {environment!r} has no such "
                              f"option (it takes: {takes})")
    hints = get_type_hints(cls)
    values = {name: _coerce(f"{PREFIX}.{name}", hints[name], value)
              for name, value in options.items()}
    try:
        return cls(**values)
    except ValueError as exc:  # messages start with the field's name: "turn_cost must ..."
        field_name = str(exc).split(" ", 1)[0].rstrip(":")
        where = f"{PREFIX}.{field_name}" if field_name in declared else PREFIX
        message = str(exc).split(" ", 1)[1] if field_name in declared else str(exc)
        raise OptionError(f"{where}: {message}") from None


def _coerce(where: str, kind: Any, value: Any) -> Any:
    """`value` checked against the declared type (the few kinds options use)."""
    origin = get_origin(kind)
    if origin is Literal:
        if value not in get_args(kind):
            raise OptionError(f"{where}: must be one of {', '.join(map(repr, get_args(kind)))}, "
                              f"got {value!r}")
        return value
    if origin is tuple:  # tuple[str, ...]
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise OptionError(f"{where}: expected a list of strings, got {value!r}")
        return tuple(value)
    if kind is dict or origin is dict:  # dict[str, Any]: a mapping passed on as given
        if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
            raise OptionError(f"{where}: expected a mapping with string keys, got {value!r}")
        return dict(value)
    if kind is bool:
        ok = isinstance(value, bool)
    elif kind is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif kind is str:
        ok = isinstance(value, str)
    else:  # a declaration this reader does not know: a bug in the environment, not input
        raise TypeError(f"{where}: option type {kind!r} is not supported by parse_options")
    if not ok:
        raise OptionError(f"{where}: expected {kind.__name__}, got {value!r}")
    return value


def check_turn_cost(value: float) -> None:
    """The per-turn cost every environment with one takes: in [0, 1]."""
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"turn_cost must be in [0, 1], got {value!r}")


def outcome_reward(success: bool, turns: int, turn_cost: float) -> float:
    """1 for success less `turn_cost` for each turn after the first, floored at 0 (so a
    success never scores below a failure); 0 for failure. In [0, 1], like a verdict."""
    if not success:
        return 0.0
    return max(0.0, 1.0 - turn_cost * (turns - 1))
