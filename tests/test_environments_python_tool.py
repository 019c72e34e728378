"""The python_tool environment: a sandboxed python tool for math, and only the model's
own last message graded by the math verifier."""

from __future__ import annotations

import json

import pytest

from rlvr.data.records import TaskRecord
from rlvr.environments import python_tool
from rlvr.environments.python_tool import PythonTool, PythonToolOptions
from rlvr.environments.sandbox import SnippetResult
from rlvr.episodes.base import EpisodeLimits
from rlvr.verifiers.base import InvalidReference

RECORD = TaskRecord("What is 2^10?", "1024", "math", "pow")


class FakeRunner:
    def __init__(self, outputs):
        self.outputs, self.codes, self.closed = list(outputs), [], False

    def run(self, code):
        self.codes.append(code)
        return self.outputs.pop(0)

    def close(self):
        self.closed = True


def _env(outputs=(), max_turns=4, **options):
    runner = FakeRunner(outputs)
    made = []

    def make_runner(_options):
        made.append(runner)
        return runner

    env = PythonTool(EpisodeLimits(max_turns=max_turns), PythonToolOptions(**options),
                     make_runner=make_runner)
    env.reset(RECORD)
    return env, runner, made


def _call(code: str) -> str:
    return "<tool_call>" + json.dumps({"name": "python", "arguments": {"code": code}}) + \
        "</tool_call>"


def test_a_tool_call_runs_and_comes_back_then_the_answer_is_graded():
    env, runner, _ = _env([SnippetResult("1024\n", 0)])
    reply = env.step("Let me compute. " + _call("print(2**10)"))
    assert runner.codes == ["print(2**10)"]
    assert reply.observation == [{"role": "user", "content": "[python tool result]\n1024\n"}]
    assert (reply.done, reply.reward, reply.info["tool_calls"], reply.info["tool_errors"]) == \
        (False, None, 1, 0)
    final = env.step("So 2^10 = \\boxed{1024}.")
    assert (final.done, final.reward) == (True, 1.0)


def test_a_tools_output_is_never_the_answer():
    """The snippet prints the right boxed answer; the model's last message has none."""
    env, _, _ = _env([SnippetResult("\\boxed{1024}\n", 0)])
    env.step(_call("print('\\\\boxed{1024}')"))
    final = env.step("I ran it, see above.")
    assert (final.done, final.reward) == (True, 0.0)
    # nor is an answer inside a tool call on the last allowed turn (its block is dropped)
    env, runner, _ = _env([], max_turns=1)
    last = env.step(_call("print('\\\\boxed{1024}')"))
    assert (last.done, last.reward, runner.codes) == (True, 0.0, [])


def test_a_right_answer_without_tools_and_the_turn_cost():
    env, _, made = _env()
    assert env.step("\\boxed{1024}").reward == 1.0
    assert made == []  # no call, no sandbox started
    env, _, _ = _env([SnippetResult("1024\n", 0)], turn_cost=0.25)
    env.step(_call("print(2**10)"))
    assert env.step("\\boxed{1024}").reward == pytest.approx(0.75)


def test_bad_calls_come_back_as_errors_and_the_episode_goes_on():
    env, runner, _ = _env([SnippetResult("ok\n", 0)], max_tool_calls=1, tool_role="tool")
    bad = env.step('<tool_call>{"name": "python", "arguments": {"cod": 1}}</tool_call>')
    assert bad.observation == [{"role": "tool", "name": "python", "content":
                                "error: bad arguments for python: arguments: missing "
                                "required field 'code'"}]
    assert (bad.done, bad.info["tool_errors"]) == (False, 1) and runner.codes == []
    two = env.step(_call("print('ok')") + _call("print('again')"))
    assert [m["content"] for m in two.observation] == [
        "ok\n", "error: no tool calls left; give your final answer"]
    unknown = env.step('<tool_call>{"name": "shell", "arguments": {}}</tool_call>')
    assert unknown.observation[0]["name"] == "tool"  # never the model's own tool name
    assert "no tool named 'shell'" in unknown.observation[0]["content"]


def test_results_are_sanitised_bounded_and_say_how_the_run_ended():
    trace = ('Traceback (most recent call last):\n  File "<snippet>", line 1\n  File '
             '"/root/.pyenv/versions/3.11.7/lib/python3.11/json/decoder.py", line 3\n'
             'ValueError: bad\x1b[0m')
    env, _, _ = _env([SnippetResult(trace, 1)])
    text = env.step(_call("c")).observation[0]["content"]
    assert text == ('[python tool result]\nTraceback (most recent call last):\n  File '
                    '"<snippet>", line 1\n  File "<path>/decoder.py", line 3\n'
                    'ValueError: bad\\u001b[0m\n[exit code 1]')
    env, _, _ = _env([SnippetResult("", None, timed_out=True),
                      SnippetResult("x" * 5000, None, truncated=True),
                      SnippetResult("", 0)], max_turns=9, output_chars=100, timeout_s=2)
    texts = [env.step(_call("c")).observation[0]["content"] for _ in range(3)]
    assert texts[0] == "[python tool result]\n(no output: print() what you want to see)\n" \
        "[stopped: the time limit of 2 s]"
    body = texts[1].split("\n", 1)[1].rsplit("\n", 1)[0]
    assert len(body) <= 100 and texts[1].endswith("[stopped: too much output]")
    assert texts[2] == "[python tool result]\n(no output: print() what you want to see)"


def test_the_prompt_describes_the_protocol_and_close_releases_the_sandbox():
    env, runner, _ = _env([SnippetResult("1\n", 0)])
    first = env.reset(RECORD)
    assert first[0]["content"].startswith("What is 2^10?\n\nYou can call these tools:\n- python:")
    assert '<tool_call>{"name": "python", "arguments": {...}}</tool_call>' in first[0]["content"]
    assert env.tools == (python_tool.PYTHON,)
    env.step(_call("print(1)"))
    env.close()
    assert runner.closed
    with pytest.raises(InvalidReference):
        env.reset(TaskRecord("q", "", "math", "empty"))


def test_a_real_sandbox_run():
    """bwrap: the snippet's stdout, and a traceback without host paths."""
    env = python_tool.make(RECORD, {"timeout_s": 3}, EpisodeLimits(max_turns=4))
    try:
        env.reset(RECORD)
        reply = env.step(_call("print(2**10)\nimport json\njson.loads('{')"))
        text = reply.observation[0]["content"]
        assert text.startswith("[python tool result]\n1024\nTraceback")
        assert "JSONDecodeError" in text and '"<snippet>", line 3' in text
        assert "/usr/" not in text and "/root/" not in text and "/home/" not in text
        assert env.step("\\boxed{1024}").reward == 1.0
    finally:
        env.close()
