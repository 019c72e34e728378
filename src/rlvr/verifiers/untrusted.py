"""Cases from outside the operator: what a data line or a request may choose.

The operator (the run's config, the command line of `rlvr serve` / `rlvr verify`, the
code that builds an adapter) chooses code, sandboxes, paths, endpoints and secrets. A
case that arrives as data (a `rlvr verify --input` line, an HTTP request item, a
dataset row handed to an adapter) may only

- name a verifier the operator allowed: a built-in, a registered name, or a plugin the
  operator listed (rlvr.verifiers.registry); an import path is refused;
- set that verifier's `request_options` (grading choices such as math's
  `answer_form` or the code check's `packages`); any other option is refused by
  name, and the operator's own options for that verifier (`OperatorPolicy`) fill in
  the rest, including inside a composite's components;
- ask for a per-item time limit no longer than the operator's.

`Refused` names the place (file:line or items[i]) and the field, and is raised before
any item is graded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Iterable, Iterator, Mapping

from rlvr.errors import UserError
from rlvr.verifiers.pool import Case
from rlvr.verifiers.registry import (UnknownVerifier, check_options, is_import_path,
                                     spec_for)

COMPONENT_FIELDS = ("verifier", "weight", "gate", "options", "name", "extract_tag")


class Refused(UserError, ValueError):
    """A case that chooses what only the operator may; `field` is the offending field
    (e.g. "options.sandbox", "options.components[1].verifier")."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class OperatorPolicy:
    """The operator's side of every case from data.

    verifier_options: per verifier name, the options the operator sets (a judge's
                      base_url, model and api_key_env; a code sandbox). A case's own
                      allowed options are laid over them.
    timeout_cap_s:    the longest per-item limit a case may ask for; None = each
                      verifier's own default limit.
    check_values:     also run the verifier's own option check here (the code check's
                      packages installed); off where grading runs elsewhere (a trainer
                      sending to `rlvr serve`: the server checks against its install).
    """

    verifier_options: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    timeout_cap_s: float | None = None
    check_values: bool = True

    def admit(self, case: Case, where: str) -> Case:
        """`case` as the operator allows it: the name checked, the options checked and
        completed with the operator's, the time limit capped. Refused otherwise (the
        message leads with `where`, e.g. "cases.jsonl:3" or "items[3]")."""
        check_name(case.verifier, where, "verifier")
        if not case.options and case.timeout_s is None \
                and case.verifier not in self.verifier_options:
            return case  # the common item: nothing to refuse, cap or fill in
        options = self.options(case.verifier, case.options, where, "options")
        timeout_s = case.timeout_s
        if timeout_s is not None:
            timeout_s = min(timeout_s, self.cap_s(case.verifier))
        return Case(case.verifier, case.completion, case.reference, options, timeout_s,
                    case.prompt)

    def cap_s(self, name: str) -> float:
        if self.timeout_cap_s is not None:
            return self.timeout_cap_s
        try:
            return spec_for(name).timeout_s
        except UnknownVerifier:
            return 5.0  # never graded: the pool answers with the unknown name

    def options(self, name: str, given: Any, where: str, field_name: str) -> dict[str, Any]:
        """The options verifier `name` runs with when a case gives `given`."""
        if not isinstance(given, dict):
            raise Refused(f"{where}: field {field_name!r} must be an object", field_name)
        try:
            spec = spec_for(name)
        except UnknownVerifier:  # not graded at all: the pool's verdict names the name
            return dict(given)
        allowed = spec.request_options
        checked: dict[str, Any] = {}
        for key, value in given.items():
            path = f"{field_name}.{key}"
            if key not in allowed:
                may = ", ".join(sorted(allowed)) or "none"
                raise Refused(f"{where}: field {path!r}: option {key!r} of verifier "
                              f"{name!r} is set by the operator only, never by data or a "
                              f"request (options a case may set: {may})", path)
            nested = spec.nested_options.get(key)
            checked[key] = value if nested is None else self._nested(nested, value, where,
                                                                     path)
        merged = {**self.verifier_options.get(name, {}), **checked}
        if checked and spec.checks_options and self.check_values:
            _check_values(name, merged, where, field_name)
        return merged

    def _nested(self, kind: str, value: Any, where: str, path: str) -> Any:
        if kind != "*":  # the options of one named verifier (r1_math's format_options)
            return self.options(kind, value, where, path)
        if not isinstance(value, list):
            raise Refused(f"{where}: field {path!r} must be a list of components", path)
        return [self._component(item, where, f"{path}[{i}]") for i, item in enumerate(value)]

    def _component(self, item: Any, where: str, path: str) -> dict[str, Any]:
        if not isinstance(item, dict) or not isinstance(item.get("verifier"), str):
            raise Refused(f"{where}: field {path!r} must be an object with a 'verifier' "
                          "name", path)
        unknown = sorted(set(item) - set(COMPONENT_FIELDS))
        if unknown:
            raise Refused(f"{where}: field {path!r}: unknown field(s) {unknown}", path)
        check_name(item["verifier"], where, f"{path}.verifier")
        options = self.options(item["verifier"], item.get("options") or {}, where,
                               f"{path}.options")
        return {**item, "options": options}


def named_verifiers(name: str, options: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(verifier name, its field relative to `options`' owner) for `name` and every
    verifier its options nest (a composite's components), so a config can check that
    each import path among them is one of its plugins."""
    yield name, "verifier"
    try:
        spec = spec_for(name)
    except UnknownVerifier:
        return
    for key, kind in spec.nested_options.items():
        value = options.get(key) if isinstance(options, Mapping) else None
        if kind != "*" and isinstance(value, Mapping):
            yield from ((n, f"options.{key}.{f}") for n, f in named_verifiers(kind, value)
                        if f != "verifier")
        elif kind == "*" and isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, Mapping) and isinstance(item.get("verifier"), str):
                    for n, f in named_verifiers(item["verifier"], item.get("options") or {}):
                        yield n, f"options.{key}[{i}].{f}"


def check_name(name: Any, where: str, field_name: str = "verifier") -> None:
    """Refused when a case names code: an import path the operator did not list. An
    unknown plain name passes (the pool's verdict names it, as before)."""
    if not isinstance(name, str):
        raise Refused(f"{where}: field {field_name!r} must be a verifier name", field_name)
    try:
        spec_for(name)
    except UnknownVerifier as exc:
        if is_import_path(name):
            raise Refused(f"{where}: field {field_name!r}: {exc.args[0]}; a data line or "
                          "request names a verifier, never code", field_name) from None


def _check_values(name: str, options: dict[str, Any], where: str, field_name: str) -> None:
    """The verifier's own cheap check of its options (the code check's packages must be
    installed here), cached: a batch repeats the same options."""
    try:
        _checked(name, json.dumps(options, sort_keys=True, default=str))
    except ValueError as exc:
        raise Refused(f"{where}: field {field_name!r}: {exc}", field_name) from None


@lru_cache(maxsize=256)
def _checked(name: str, options_json: str) -> None:
    check_options(name, json.loads(options_json))


def parse_verifier_options(entries: Iterable[str], flag: str = "--verifier-options"
                           ) -> dict[str, dict[str, Any]]:
    """The operator's `NAME=JSON` entries (e.g. judge='{"base_url": ...}') as a mapping;
    ValueError naming the entry. Plugins must be installed first (their names are
    checked here)."""
    chosen: dict[str, dict[str, Any]] = {}
    for entry in entries:
        name, sep, text = entry.partition("=")
        if not sep or not name:
            raise ValueError(f"{flag} {entry!r}: expected NAME=JSON-OBJECT")
        try:
            spec_for(name)
            value = json.loads(text)
        except UnknownVerifier as exc:
            raise ValueError(f"{flag} {entry!r}: {exc.args[0]}") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{flag} {name}=...: not JSON: {exc.msg}") from None
        if not isinstance(value, dict):
            raise ValueError(f"{flag} {name}=...: must be a JSON object")
        chosen[name] = {**chosen.get(name, {}), **value}
    return chosen
