"""The subset of JSON Schema that tool arguments use, checked without a dependency.

Supported: `type` object (with `properties`, `required`, `additionalProperties: false`),
string, integer, number, boolean; `enum`; `description` (ignored). `check_schema`
refuses any other keyword, so a tool whose schema this validator cannot enforce fails
when the environment is built rather than accepting unchecked arguments.
"""

from __future__ import annotations

from typing import Any

_TYPES = ("object", "string", "integer", "number", "boolean")
_KEYWORDS = {"type", "properties", "required", "additionalProperties", "enum", "description",
             "title"}


def check_schema(schema: Any, where: str = "parameters") -> None:
    """ValueError naming the place when `schema` is outside the supported subset."""
    if not isinstance(schema, dict):
        raise ValueError(f"{where}: a schema must be an object")
    extra = sorted(set(schema) - _KEYWORDS)
    if extra:
        raise ValueError(f"{where}: unsupported schema keyword(s) {extra}")
    if schema.get("type") not in _TYPES:
        raise ValueError(f"{where}: type must be one of {_TYPES}, got {schema.get('type')!r}")
    if schema["type"] != "object":
        return
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise ValueError(f"{where}.properties: must be an object")
    for name, sub in properties.items():
        check_schema(sub, f"{where}.properties.{name}")
    required = schema.get("required", [])
    if not isinstance(required, list) or not set(required) <= set(properties):
        raise ValueError(f"{where}.required: must list declared properties")


def _type_ok(kind: str, value: Any) -> bool:
    if kind == "object":
        return isinstance(value, dict)
    if kind == "string":
        return isinstance(value, str)
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":  # JSON has one number type: 3.0 is an integer, true is not
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer())
    return isinstance(value, (int, float)) and not isinstance(value, bool)  # number


def validate(schema: dict[str, Any], value: Any, where: str = "arguments") -> str | None:
    """None when `value` satisfies `schema` (already passed by check_schema), else the
    first problem found, naming where it is (`arguments.code: expected string`)."""
    kind = schema["type"]
    if not _type_ok(kind, value):
        return f"{where}: expected {kind}, got {_json_type(value)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: must be one of {schema['enum']}"
    if kind != "object":
        return None
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in value:
            return f"{where}: missing required field {name!r}"
    for name, item in value.items():
        if name in properties:
            problem = validate(properties[name], item, f"{where}.{name}")
            if problem:
                return problem
        elif schema.get("additionalProperties", True) is False:
            return f"{where}: unexpected field {str(name)[:40]!r}"
    return None


def _json_type(value: Any) -> str:
    """The JSON name of a decoded value's type (what the model wrote)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"
