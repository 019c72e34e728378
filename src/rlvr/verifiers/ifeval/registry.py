"""Instruction ids -> checkers, with the kwargs each one takes and their validation.

A checker is a plain function `check(response, **kwargs) -> bool` registered with the
`instruction` decorator in one of the group modules (keywords.py, length.py, ...). Every
kwarg a checker declares is required: IFEval draws missing kwargs at random when it
*generates* prompts, which would make a reward random, so here a missing kwarg is an
`InvalidReference`, as are unknown ids, unknown kwargs and values of the wrong kind.
Kwargs whose value is None are dropped first, as IFEval's evaluation does (Hugging Face
copies of the data carry every kwarg name on every row, most of them null).
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass
from typing import Any, Callable

from rlvr.verifiers.base import InvalidReference
from rlvr.verifiers.ifeval.text import RELATIONS, supported_languages

# What a kwarg may hold. "pattern" is a string IFEval uses as a regular expression.
KINDS = ("int", "str", "str_list", "relation", "char", "language", "pattern")


@dataclass(frozen=True)
class InstructionSpec:
    """One instruction id: its checker, its kwargs (name -> kind) and a description."""

    id: str
    check: Callable[..., bool]
    params: dict[str, str]
    description: str
    validate: Callable[[dict[str, Any]], str | None] | None = None  # cross-kwarg rules
    # The checker depends on language detection and takes the keyword-only argument
    # `unknown_follows` (what text langdetect cannot classify counts as).
    uses_language: bool = False


INSTRUCTIONS: dict[str, InstructionSpec] = {}

# Group modules, imported on first lookup so each registers its ids.
_GROUPS = ("keywords", "language", "length", "detectable_content", "format", "change_case",
           "combination", "startend", "punctuation", "extra")


def instruction(instruction_id: str, description: str, *,
                validate: Callable[[dict[str, Any]], str | None] | None = None,
                uses_language: bool = False, **params: str) -> Callable[[Callable[..., bool]], Callable[..., bool]]:
    """Register the decorated checker under `instruction_id` with kwargs `params`."""
    for kind in params.values():
        if kind not in KINDS:
            raise ValueError(f"{instruction_id}: unknown kwarg kind {kind!r}")

    def register(check: Callable[..., bool]) -> Callable[..., bool]:
        if instruction_id in INSTRUCTIONS:
            raise ValueError(f"instruction id {instruction_id!r} registered twice")
        INSTRUCTIONS[instruction_id] = InstructionSpec(instruction_id, check, dict(params),
                                                       description, validate, uses_language)
        return check
    return register


def all_instructions() -> dict[str, InstructionSpec]:
    for group in _GROUPS:
        importlib.import_module(f"rlvr.verifiers.ifeval.{group}")
    return INSTRUCTIONS


def _check_value(where: str, kind: str, value: Any) -> Any:
    """The value, normalised (tuples to lists), or InvalidReference naming `where`."""
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            # JSON readers may hand 3.0 for 3; accept whole floats, nothing else
            if isinstance(value, float) and value.is_integer():
                value = int(value)
            else:
                raise InvalidReference(f"{where} must be an integer, got {value!r}")
        if value < 0:
            raise InvalidReference(f"{where} must be >= 0, got {value}")
        return value
    if kind == "str_list":
        if not isinstance(value, (list, tuple)) or not value or \
                not all(isinstance(v, str) and v.strip() for v in value):
            raise InvalidReference(f"{where} must be a non-empty list of non-empty strings, "
                                   f"got {value!r}")
        for item in value:
            _compile(where, item)
        return list(value)
    if not isinstance(value, str) or not value.strip():
        raise InvalidReference(f"{where} must be a non-empty string, got {value!r}")
    if kind == "relation" and value not in RELATIONS:
        raise InvalidReference(f"{where} must be one of {list(RELATIONS)}, got {value!r}")
    if kind == "char" and len(value) != 1:
        raise InvalidReference(f"{where} must be a single character, got {value!r}")
    if kind == "language" and value not in supported_languages():
        raise InvalidReference(f"{where}: {value!r} is not a language code langdetect knows "
                               f"({', '.join(sorted(supported_languages()))})")
    if kind == "pattern":
        _compile(where, value)
    return value


def _compile(where: str, pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise InvalidReference(f"{where}: {pattern!r} is not a valid regular expression "
                               f"(IFEval matches keywords as regexes): {exc}") from None


def parse_instruction(instruction_id: Any, kwargs: Any, where: str
                      ) -> tuple[InstructionSpec, dict[str, Any]]:
    """The spec and clean kwargs for one instruction, or InvalidReference."""
    specs = all_instructions()
    if not isinstance(instruction_id, str) or instruction_id not in specs:
        raise InvalidReference(f"{where}: unknown instruction id {instruction_id!r}")
    spec = specs[instruction_id]
    if kwargs is None:
        kwargs = {}
    if not isinstance(kwargs, dict):
        raise InvalidReference(f"{where} ({instruction_id}): kwargs must be an object, "
                               f"got {type(kwargs).__name__}")
    given = {k: v for k, v in kwargs.items() if v is not None}
    unknown = sorted(set(given) - set(spec.params))
    if unknown:
        raise InvalidReference(f"{where} ({instruction_id}): unknown kwarg(s) {unknown}; "
                               f"it takes {sorted(spec.params) or 'none'}")
    missing = sorted(set(spec.params) - set(given))
    if missing:
        raise InvalidReference(f"{where} ({instruction_id}): missing kwarg(s) {missing}")
    clean = {name: _check_value(f"{where}.{name} ({instruction_id})", kind, given[name])
             for name, kind in spec.params.items()}
    problem = spec.validate(clean) if spec.validate else None
    if problem:
        raise InvalidReference(f"{where} ({instruction_id}): {problem}")
    return spec, clean
