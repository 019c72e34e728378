"""rlvr.training.sft_prompts: what a warm-start example looks like. "task": the one-turn
prompt; "episode": the environment's first prompt (its tools and note in it), and with
a followup template a second example after the environment's real reply to the taught
first turn (a python_tool call answered by a scripted runner here)."""

from __future__ import annotations

import json
import random

from rlvr.data.prompts import PromptRenderer
from rlvr.data.records import TaskRecord
from rlvr.environments.python_tool import PythonTool, PythonToolOptions
from rlvr.environments.sandbox import SnippetResult
from rlvr.episodes.base import EpisodeLimits
from rlvr.training.config import SFTConfig
from rlvr.training.sft import worked_example
from rlvr.training.sft_prompts import sft_examples
from rlvr.training.tiny import char_tokenizer

RECORD = TaskRecord("What is 47 * 38?", "1786", "math", "p1", {"a": 47, "op": "*", "b": 38})
CALL = '<tool_call>{{"name": "python", "arguments": {{"code": "print({a} {op} {b})"}}}}</tool_call>'


class Runner:
    def __init__(self):
        self.codes = []

    def run(self, code):
        self.codes.append(code)
        return SnippetResult(f"{eval(code.removeprefix('print'))}\n", 0)  # noqa: S307 (test)

    def close(self):
        pass


def _setup(**sft):
    renderer = PromptRenderer(char_tokenizer(), style="plain", template="{bos}{prompt}")
    runners = []

    def make_env(record):
        runner = Runner()
        runners.append(runner)
        return PythonTool(EpisodeLimits(max_turns=2),
                          PythonToolOptions(describe_tools=False, note="Use the tool."),
                          make_runner=lambda _options: runner)
    cfg = SFTConfig(worked_solutions=False, target_template=CALL, **sft)
    return cfg, renderer, sft_examples(cfg, renderer, make_env), runners


def test_task_prompts_are_the_one_turn_prompt():
    cfg, renderer, examples, runners = _setup()
    completion = worked_example(RECORD, cfg, random.Random(0))
    assert examples(RECORD, completion) == [(renderer.render(RECORD), completion)]
    assert runners == []  # no environment is made


def test_episode_prompt_holds_the_tools_and_note_and_the_call_is_taught():
    cfg, renderer, examples, runners = _setup(prompt="episode")
    completion = worked_example(RECORD, cfg, random.Random(0))
    assert json.loads(completion.removeprefix("<tool_call>").removesuffix("</tool_call>")) == {
        "name": "python", "arguments": {"code": "print(47 * 38)"}}
    [(prompt, taught)] = examples(RECORD, completion)
    assert taught == completion
    assert prompt.endswith("What is 47 * 38?\n\nUse the tool.")
    assert '"name": "python"' in prompt.split("What is")[0]  # the tool's schema, first
    assert runners[0].codes == []  # nothing runs without a followup


def test_followup_example_follows_the_tools_real_reply():
    cfg, renderer, examples, runners = _setup(prompt="episode",
                                              followup_template="\\boxed{{{reference}}}")
    completion = worked_example(RECORD, cfg, random.Random(0))
    first, second = examples(RECORD, completion)
    assert runners[0].codes == ["print(47 * 38)"]
    eos = renderer.tokenizer.decode([renderer.tokenizer.eos_token_id])
    # the plain-style protocol: a blank line, "User: ...", a blank line, "Assistant:"
    assert second == (first[0] + completion + eos
                      + "\n\nUser: [python tool result]\n1786\n\n\nAssistant:", "\\boxed{1786}")


def test_a_followup_without_episode_prompts_is_refused():
    import pytest

    from rlvr.config.loader import ConfigError, load_config
    from rlvr.training.config import TrainConfig

    with pytest.raises(ConfigError, match="sft.followup_template"):
        load_config(TrainConfig, None, ["sft.followup_template=x", "sft.prompt=task"])
