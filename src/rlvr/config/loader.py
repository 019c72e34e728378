"""Build nested dataclass configs from YAML files and dotted command-line overrides.

Schema rules: a config is a dataclass whose fields are scalars (bool, int, float, str),
`Literal[...]`, `X | None`, `list[X]`, `tuple[X, ...]`, `dict[str, X]`, `Any`, `Named`
(a component chosen by name, with its own options), or nested dataclasses (with
defaults via `field(default_factory=...)`). Document each field with
`field(metadata={"help": "..."})` (shown by `describe_config`). A dataclass may define
`validate(self)` raising `ConfigError("message")`; the loader prefixes the dotted path.

Precedence: dataclass defaults < profile defaults < YAML file < overrides. A schema may
define a static `profile_defaults(data) -> dict` (nested, like the YAML): given what the
user wrote (the YAML merged with the overrides), the defaults that replace the
dataclass ones; a field the user set always keeps the user's value (rlvr.training.profile).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from pathlib import Path
from typing import Any, Literal, Sequence, TypeVar, Union

import yaml

from rlvr.errors import UserError

T = TypeVar("T")


@dataclasses.dataclass(frozen=True, repr=False)
class Named:
    """A component chosen by name, with options of its own (a loss, an estimator).

    In YAML either the bare name, meaning that component with its own defaults
    (`policy_loss: gspo`), or a mapping with `name` (`policy_loss: {name: gspo,
    eps_low: 1e-3}`). An override may set one option (`algorithm.policy_loss.eps_high=
    0.28`): the configured name stays. The loader checks the shape; whoever builds the
    component checks the name and options (e.g. a section's `validate`)."""

    name: str
    options: dict[str, Any] = dataclasses.field(default_factory=dict)

    def plain(self) -> str | dict[str, Any]:
        """The YAML form: the bare name when there are no options."""
        return {"name": self.name, **self.options} if self.options else self.name

    def __repr__(self) -> str:
        return repr(self.plain())


class ConfigError(UserError, ValueError):
    """A config value is wrong; the message names the field (and the file, if any)."""

    def __init__(self, message: str, field: str = "") -> None:
        self.field = field
        self.bare_message = message
        super().__init__(f"{field}: {message}" if field else message)


def load_config(schema: type[T], path: str | Path | None = None,
                overrides: Sequence[str] = ()) -> T:
    """An instance of `schema` from defaults, then the YAML at `path`, then `overrides`
    (each "a.b.c=value", the value parsed as a YAML scalar/flow value)."""
    data = read_config_data(path, overrides)
    upgrade = getattr(schema, "upgrade_data", None)
    if callable(upgrade):
        data = upgrade(data)  # fields an older version wrote, in today's form
    profile = getattr(schema, "profile_defaults", None)
    if callable(profile):
        data = _merge(profile(data), data)  # what the user wrote wins over the profile
    try:
        return _build(schema, data, prefix="")
    except ConfigError as exc:
        if path is not None:
            raise ConfigError(f"{exc.bare_message} (in {path} or overrides)",
                              exc.field) from None
        raise


def read_config_data(path: str | Path | None = None,
                     overrides: Sequence[str] = ()) -> dict[str, Any]:
    """What the user wrote: the YAML at `path` with `overrides` applied, as nested plain
    data (no defaults). A dotted field is user-set iff it is present here."""
    data: dict[str, Any] = {}
    if path is not None:
        source = str(path)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read config file: {exc.strerror}", source) from None
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"invalid YAML: {exc}", source) from None
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError("the top level must be a mapping of fields", source)
        data = loaded or {}
    for override in overrides:
        _apply_override(data, override)
    return data


def _apply_override(data: dict[str, Any], override: str) -> None:
    key, sep, raw = override.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"override {override!r} is not of the form key.sub=value")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw  # a plain string that merely looks odd to YAML
    parts = key.split(".")
    node = data
    for i, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if isinstance(child, str) and i == len(parts) - 2:
            # `x: gspo` then `x.eps_low=...`: a Named component's option (else the
            # field's type refuses the mapping, naming it)
            child = node[part] = {"name": child}
        if not isinstance(child, dict):
            raise ConfigError(f"cannot set {key!r}: {'.'.join(parts[:i + 1])} is not a section",
                              key)
        node = child
    node[parts[-1]] = value


def _build(schema: type[T], data: Any, prefix: str) -> T:
    if not isinstance(data, dict):
        raise ConfigError(f"expected a mapping of fields, got {_describe(data)}", prefix)
    hints = typing.get_type_hints(schema)
    fields = {f.name: f for f in dataclasses.fields(schema) if f.init}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        name = _join(prefix, unknown[0])
        raise ConfigError(f"unknown field (known: {', '.join(sorted(fields))})", name)
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _coerce(hints[name], value, _join(prefix, name), fields[name])
    for name, f in fields.items():  # nested sections absent from the data: build defaults
        if name not in kwargs and dataclasses.is_dataclass(hints[name]) and \
                f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            kwargs[name] = _build(hints[name], {}, _join(prefix, name))
    try:
        instance = schema(**kwargs)
    except TypeError as exc:
        raise ConfigError(str(exc), prefix) from None
    validate = getattr(instance, "validate", None)
    if callable(validate):
        try:
            validate()
        except ConfigError as exc:
            raise ConfigError(exc.bare_message, _join(prefix, exc.field)) from None
    return instance


def _coerce(hint: Any, value: Any, name: str, f: dataclasses.Field | None = None) -> Any:
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return value
    if hint is Named:
        return _coerce_named(value, name, f)
    if dataclasses.is_dataclass(hint):
        if isinstance(value, hint):
            return value
        base = {} if f is None else config_to_dict(_default_of(f)) if _has_default(f) else {}
        return _build(hint, _merge(base, value) if isinstance(value, dict) else value, name)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in (a for a in args if a is not type(None)):
            try:
                return _coerce(arg, value, name)
            except ConfigError as exc:
                errors.append(exc.bare_message)
        raise ConfigError("; ".join(errors), name)
    if origin is Literal:
        if value not in args:
            raise ConfigError(f"must be one of {', '.join(map(repr, args))}, got {value!r}", name)
        return value
    if origin in (list, tuple):
        if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
            raise ConfigError(f"expected a list, got {_describe(value)}", name)
        item = args[0] if args else Any
        items = [_coerce(item, v, f"{name}[{i}]") for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(f"expected a mapping, got {_describe(value)}", name)
        item = args[1] if len(args) == 2 else Any
        return {str(k): _coerce(item, v, f"{name}.{k}") for k, v in value.items()}
    return _coerce_scalar(hint, value, name)


def _coerce_named(value: Any, name: str, f: dataclasses.Field | None) -> Named:
    if isinstance(value, Named):
        return value
    if isinstance(value, str):
        return Named(value)
    if not isinstance(value, dict):
        raise ConfigError(f"expected a name or a mapping with `name`, got {_describe(value)}",
                          name)
    options = dict(value)
    chosen = options.pop("name", None)
    if chosen is None:  # options only: they refine the default component
        default = _default_of(f) if f is not None and _has_default(f) else None
        if not isinstance(default, Named):
            raise ConfigError("a mapping here needs a `name`", name)
        chosen, options = default.name, {**default.options, **options}
    if not isinstance(chosen, str):
        raise ConfigError(f"name: expected a string, got {_describe(chosen)}", name)
    return Named(chosen, options)


def _coerce_scalar(hint: Any, value: Any, name: str) -> Any:
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"expected true or false, got {_describe(value)}", name)
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ConfigError(f"expected an integer, got {_describe(value)}", name)
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML 1.1 reads "1e-5" as a string
            try:
                return float(value)
            except ValueError:
                pass
        raise ConfigError(f"expected a number, got {_describe(value)}", name)
    if hint is str:
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        raise ConfigError(f"expected a string, got {_describe(value)}", name)
    if isinstance(hint, type) and isinstance(value, hint):
        return value
    raise ConfigError(f"unsupported value {_describe(value)} for type {hint}", name)


def _has_default(f: dataclasses.Field) -> bool:
    return f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING


def _default_of(f: dataclasses.Field) -> Any:
    return f.default if f.default is not dataclasses.MISSING else f.default_factory()


def _merge(base: dict[str, Any], update: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in update.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _describe(value: Any) -> str:
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}"


def config_to_dict(config: Any) -> Any:
    """Plain data (dicts, lists, scalars) for a config instance."""
    if isinstance(config, Named):
        return config_to_dict(config.plain())
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {f.name: config_to_dict(getattr(config, f.name))
                for f in dataclasses.fields(config)}
    if isinstance(config, (list, tuple)):
        return [config_to_dict(v) for v in config]
    if isinstance(config, dict):
        return {k: config_to_dict(v) for k, v in config.items()}
    return config


def save_config(config: Any, path: str | Path) -> None:
    """Write the resolved config as YAML (round-trips through `load_config`)."""
    Path(path).write_text(yaml.safe_dump(config_to_dict(config), sort_keys=False),
                          encoding="utf-8")


def describe_config(schema: type, prefix: str = "",
                    notes: dict[str, str] | None = None) -> list[str]:
    """One line per field: dotted name, default, then a comment with the field's choices
    (a Literal's values), its help text and `notes[dotted name]` (e.g. another default)."""
    lines: list[str] = []
    hints = typing.get_type_hints(schema)
    for f in dataclasses.fields(schema):
        name, hint = _join(prefix, f.name), hints[f.name]
        if dataclasses.is_dataclass(hint) and hint is not Named:
            lines.extend(describe_config(hint, name, notes))
            continue
        default = repr(_default_of(f)) if _has_default(f) else "(required)"
        choices = f.metadata.get("choices") or _choices(hint)
        comment = " ".join(filter(None, [
            f"one of {' | '.join(map(str, choices))}." if choices else "",
            f.metadata.get("help", ""),
            f"[{notes[name]}]" if notes and name in notes else ""]))
        lines.append(f"{name} = {default}  # {comment}" if comment else f"{name} = {default}")
    return lines


def _choices(hint: Any) -> tuple[Any, ...]:
    """A Literal's values (also inside `X | None`), else ()."""
    if typing.get_origin(hint) is Literal:
        return typing.get_args(hint)
    if typing.get_origin(hint) in (Union, types.UnionType):
        for arg in typing.get_args(hint):
            if typing.get_origin(arg) is Literal:
                return typing.get_args(arg)
    return ()
