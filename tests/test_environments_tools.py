"""The tool-call protocol (rlvr.environments.tools), the argument schema validator
(schema.py) and the text that goes back to the model (text.py)."""

from __future__ import annotations

import json

import pytest

from rlvr.data.records import TaskRecord
from rlvr.environments.schema import check_schema, validate
from rlvr.environments.text import bounded, first_messages, sanitise, scrub_paths
from rlvr.environments.tools import (parse_tool_calls, strip_tool_calls, supports_tool_role,
                                     tool_message)
from rlvr.episodes.base import ToolSpec

CODE = ToolSpec("python", "runs code", {
    "type": "object", "required": ["code"], "additionalProperties": False,
    "properties": {"code": {"type": "string"}}})
ADD = ToolSpec("add", "adds", {
    "type": "object", "required": ["a", "b"],
    "properties": {"a": {"type": "integer"}, "b": {"type": "number"},
                   "exact": {"type": "boolean"}, "mode": {"type": "string", "enum": ["x", "y"]}}})
TOOLS = [CODE, ADD]


def _call(payload) -> str:
    return f"<tool_call>{json.dumps(payload)}</tool_call>"


def test_the_plain_protocol_and_the_forms_templates_emit():
    plain = parse_tool_calls("Let me run it. " + _call({"name": "python",
                                                        "arguments": {"code": "print(1)"}}), TOOLS)
    assert [(c.name, c.arguments, c.error) for c in plain] == [("python", {"code": "print(1)"}, None)]
    qwen = '<tool_call>\n{"name": "add", "arguments": {"a": 2, "b": 0.5}}\n</tool_call>'
    smol = '<tool_call>[{"name": "add", "arguments": {"a": 1, "b": 2}}, ' \
           '{"name": "python", "arguments": {"code": "x"}}]</tool_call>'
    llama_words = _call({"name": "add", "parameters": {"a": 1, "b": 1}})
    openai_string = _call({"name": "add", "arguments": json.dumps({"a": 3, "b": 4})})
    found = [parse_tool_calls(text, TOOLS) for text in (qwen, smol, llama_words, openai_string)]
    assert [[(c.name, c.arguments) for c in calls] for calls in found] == [
        [("add", {"a": 2, "b": 0.5})],
        [("add", {"a": 1, "b": 2}), ("python", {"code": "x"})],
        [("add", {"a": 1, "b": 1})],
        [("add", {"a": 3, "b": 4})]]
    assert all(c.error is None for calls in found for c in calls)


def test_two_calls_in_one_turn_keep_their_order_and_no_tags_means_no_calls():
    text = _call({"name": "python", "arguments": {"code": "a"}}) + " then " + \
        _call({"name": "python", "arguments": {"code": "b"}})
    assert [c.arguments["code"] for c in parse_tool_calls(text, TOOLS)] == ["a", "b"]
    assert parse_tool_calls("The answer is 4. No tools: {\"name\": \"python\"}", TOOLS) == []


@pytest.mark.parametrize("text, says", [
    ("<tool_call>{name: python}</tool_call>", "not valid JSON"),
    ('<tool_call>{"name": "python", "arguments": {"code": "x"}}', "no closing </tool_call>"),
    (_call({"name": "shell", "arguments": {}}), "no tool named 'shell' (tools: add, python)"),
    (_call({"name": "python", "arguments": {}}), "missing required field 'code'"),
    (_call({"name": "python", "arguments": {"code": 3}}), "arguments.code: expected string, got number"),
    (_call({"name": "python", "arguments": {"code": "x", "rm": 1}}), "unexpected field 'rm'"),
    (_call({"name": "python", "arguments": ["x"]}), "arguments must be a JSON object"),
    (_call({"name": "add", "arguments": "{not json"}), "arguments string is not valid JSON"),
    (_call({"arguments": {}}), 'must be an object with a "name" string'),
    ("<tool_call>[]</tool_call>", "empty list"),
])
def test_a_call_that_cannot_run_is_an_error_for_the_model_never_an_exception(text, says):
    calls = parse_tool_calls(text, TOOLS)
    assert len(calls) == 1 and calls[0].error is not None
    assert says in calls[0].error


@pytest.mark.parametrize("value, problem", [
    ({"a": 3, "b": 1}, None),
    ({"a": 3.0, "b": 1}, None),                 # JSON's 3.0 is an integer
    ({"a": 2.5, "b": 1}, "arguments.a: expected integer, got number"),
    ({"a": True, "b": 1}, "arguments.a: expected integer, got boolean"),
    ({"a": 1, "b": "1"}, "arguments.b: expected number, got string"),
    ({"a": 1, "b": False}, "arguments.b: expected number, got boolean"),
    ({"a": 1, "b": 1, "exact": 1}, "arguments.exact: expected boolean, got number"),
    ({"a": 1, "b": 1, "mode": "z"}, "arguments.mode: must be one of ['x', 'y']"),
    ({"a": 1, "b": 1, "extra": [1]}, None),     # additionalProperties not false: allowed
    ({"b": 1}, "arguments: missing required field 'a'"),
    ([1], "arguments: expected object, got array"),
])
def test_the_schema_subset(value, problem):
    check_schema(ADD.parameters)
    assert validate(ADD.parameters, value) == problem


def test_nested_objects_and_schemas_outside_the_subset():
    nested = {"type": "object", "properties": {"point": {
        "type": "object", "required": ["x"], "properties": {"x": {"type": "number"}}}}}
    check_schema(nested)
    assert validate(nested, {"point": {"x": "1"}}) == "arguments.point.x: expected number, got string"
    with pytest.raises(ValueError, match="type must be one of"):
        check_schema({"type": "array"})
    with pytest.raises(ValueError, match=r"unsupported schema keyword\(s\) \['minimum'\]"):
        check_schema({"type": "integer", "minimum": 0})
    with pytest.raises(ValueError, match="required: must list declared properties"):
        check_schema({"type": "object", "properties": {}, "required": ["x"]})


def test_strip_tool_calls_keeps_only_the_models_own_words():
    text = "Checking. " + _call({"name": "python", "arguments": {"code": "print(1)"}}) + \
        " Done: 4. <tool_call>{\"name\": \"python\", \"argu"
    assert strip_tool_calls(text) == "Checking.  Done: 4. "


def test_tool_messages_and_which_templates_have_a_tool_role():
    assert tool_message("python", "4\n", "tool") == {"role": "tool", "name": "python",
                                                     "content": "4\n"}
    assert tool_message("python", "4\n", "user") == {"role": "user",
                                                     "content": "[python tool result]\n4\n"}
    qwen_like = "{% elif message.role == \"tool\" %}<tool_response>{{ message.content }}"
    assert supports_tool_role(qwen_like)
    assert supports_tool_role("{% if message['role'] == 'tool' %}x{% endif %}")
    assert not supports_tool_role("{% if tools %}{{ tools }}{% endif %}{{ message['role'] }}")
    assert not supports_tool_role(None) and not supports_tool_role("")


def test_host_paths_are_shortened_and_text_is_bounded():
    trace = 'File "/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py", line 3'
    assert scrub_paths(trace) == 'File "<path>/decoder.py", line 3'
    assert scrub_paths("ratio 3/4 and <snippet> and a/b/c stay") == \
        "ratio 3/4 and <snippet> and a/b/c stay"
    text = "A" * 500 + "Z" * 500
    cut = bounded(text, 200)
    assert len(cut) <= 200 and cut.startswith("A" * 60) and cut.endswith("Z" * 60)
    assert "[... 8" in cut  # how much was cut is said
    assert bounded("short", 200) == "short"
    safe = sanitise("bell\x07 esc\x1b[2J /home/user/secret/file.py", 300)
    assert safe == "bell\\u0007 esc\\u001b[2J <path>/file.py"


def test_first_messages_copy_the_prompt_and_add_the_note():
    record = TaskRecord("Q?", "1", "exact", "r1")
    assert first_messages(record, "note") == [{"role": "user", "content": "Q?\n\nnote"}]
    chat = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    record = TaskRecord(chat, "1", "exact", "r2")
    assert first_messages(record, "N") == [{"role": "system", "content": "S"},
                                          {"role": "user", "content": "U\n\nN"}]
    assert chat[1]["content"] == "U"  # the record is untouched
