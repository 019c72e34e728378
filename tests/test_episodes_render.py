"""Turn rendering (rlvr.episodes.render) with SmolLM2's tokenizer and chat template: a
3-turn episode's ids are exactly the sampled ids and the environment's delta ids, the
whole sequence reads as the chat transcript, and re-tokenizing that transcript would
not give the sampled ids back (why the runner never does)."""

from __future__ import annotations

import pytest

from rlvr.data.prompts import PromptRenderer
from rlvr.data.records import TaskRecord
from rlvr.episodes.base import EpisodeLimits, Reply, ToolSpec
from rlvr.episodes.render import TOOLS_HEADER, TurnRenderer, tools_text
from rlvr.episodes.runner import run_episodes
from episode_helpers import ScriptedIdsEngine, ids
from rlvr.rollout.base import SamplingParams

PARAMS = SamplingParams(max_new_tokens=16, temperature=1.0, seed=0)


@pytest.fixture(scope="module")
def tok():
    from transformers import AutoTokenizer

    from rlvr.models import resolve_model

    return AutoTokenizer.from_pretrained(resolve_model("smollm2-135m-instruct"))


def split_hello(tok) -> list[int]:
    """"hello" sampled as two tokens, "h" and "ello": a sequence the model may sample."""
    pieces = tok.convert_tokens_to_ids(["h", "ello"])
    assert tok.unk_token_id not in pieces and tok.decode(pieces) == "hello"
    return pieces


class ThreeTurns:
    tools = ()
    limits = EpisodeLimits(max_turns=3, max_tokens=200, step_timeout_s=5)

    def __init__(self):
        self.turn = 0

    def reset(self, task):
        return [{"role": "user", "content": task.prompt}]

    def step(self, turn):
        self.turn += 1
        if self.turn == 1:
            return Reply([{"role": "tool", "content": "42"}])
        if self.turn == 2:
            return Reply([{"role": "user", "content": "Sure?"}])
        return Reply(done=True, reward=1.0)

    def close(self):
        pass


def test_three_turn_ids_are_sampled_plus_delta_and_read_as_the_transcript(tok):
    eos = tok.eos_token_id
    assert tok.decode([eos]) == "<|im_end|>"
    sampled = [ids(tok, "Let me call the tool.") + [eos], split_hello(tok) + [eos],
               ids(tok, "Yes: 42") + [eos]]
    texts = ["Let me call the tool.", "hello", "Yes: 42"]

    def script(call, i, j):
        return texts[call]

    class Engine(ScriptedIdsEngine):  # samples the fixed ids, "h" + "ello" included
        def generate_ids(self, prompt_ids, n, params):
            out = super().generate_ids(prompt_ids, n, params)
            call = len(self.calls) - 1
            for group in out:
                for c in group:
                    c.token_ids, c.logprobs = sampled[call], [-1.0] * len(sampled[call])
            return out

    turns = TurnRenderer(PromptRenderer(tok, style="chat"))
    episode = run_episodes(Engine(tok, script), turns, lambda r: ThreeTurns(),
                           [TaskRecord("What is 6*7?", "42", "exact", "p")], 1, PARAMS)[0][0]
    # SmolLM2's template: the turn's <|im_end|> is the model's; the env writes the rest
    delta_tool = ids(tok, "\n<|im_start|>tool\n42<|im_end|>\n<|im_start|>assistant\n")
    delta_user = ids(tok, "\n<|im_start|>user\nSure?<|im_end|>\n<|im_start|>assistant\n")
    c = episode.completion
    assert c.token_ids == sampled[0] + delta_tool + sampled[1] + delta_user + sampled[2]
    assert c.loss_mask == ([1] * len(sampled[0]) + [0] * len(delta_tool) + [1] * len(sampled[1])
                           + [0] * len(delta_user) + [1] * len(sampled[2]))
    transcript = [{"role": "user", "content": "What is 6*7?"},
                  {"role": "assistant", "content": texts[0]}, {"role": "tool", "content": "42"},
                  {"role": "assistant", "content": texts[1]}, {"role": "user", "content": "Sure?"},
                  {"role": "assistant", "content": texts[2]}]
    assert episode.messages == transcript
    assert (episode.turns, episode.reward, episode.final_text) == (3, 1.0, "Yes: 42")
    # the sequence reads as the template's transcript (which adds "\n" after the last turn)
    chat = tok.apply_chat_template(transcript, tokenize=False)
    assert tok.decode(c.prompt_ids + c.token_ids) == chat.removesuffix("\n")
    # ... yet tokenizing that text does not give back what the model sampled
    retokenized = ids(tok, chat.removesuffix("\n"))
    assert retokenized != c.prompt_ids + c.token_ids
    assert ids(tok, "hello") != split_hello(tok)


def test_tools_go_in_the_first_user_message_without_a_tool_format(tok):
    spec = ToolSpec("run", "Run Python", {"type": "object", "properties": {}})
    turns = TurnRenderer(PromptRenderer(tok, style="chat"))
    assert not turns.native_tools  # SmolLM2's template has no tools
    first = turns.first_prompt([{"role": "user", "content": "Add 2 and 2."}], [spec], "p")
    expected = tok.apply_chat_template(
        [{"role": "user", "content": f"{tools_text([spec])}\n\nAdd 2 and 2."}],
        tokenize=False, add_generation_prompt=True)
    assert first.text == expected and first.ids == ids(tok, expected)
    assert tools_text([spec]).splitlines()[0] == TOOLS_HEADER
    assert '"name": "run"' in tools_text([spec])


def test_a_template_with_a_tool_format_gets_the_schemas(tok):
    seen = {}

    class Recording:
        chat_template = "{% for t in tools %}{{ t }}{% endfor %}"
        all_special_ids = []

        def apply_chat_template(self, messages, tokenize, add_generation_prompt, tools=None):
            seen["tools"] = tools
            return "T|" + "|".join(m["content"] for m in messages)

        def __call__(self, text, add_special_tokens):
            return {"input_ids": [ord(ch) for ch in text]}

    spec = ToolSpec("run", "Run Python", {"type": "object"})
    turns = TurnRenderer(PromptRenderer(Recording(), style="chat"))
    first = turns.first_prompt([{"role": "user", "content": "hi"}], [spec], "p")
    assert turns.native_tools and seen["tools"] == [spec.to_json_schema()]
    assert first.text == "T|hi"


def test_plain_protocol_by_hand(tok):
    turns = TurnRenderer(PromptRenderer(tok, style="plain", template="{bos}{prompt}"))
    first = turns.first_prompt([{"role": "user", "content": "2+2="}], (), "p")
    assert first.text == tok.bos_token + "2+2="
    delta = turns.observation_ids(first.conversation, "5", tok.eos_token_id,
                                  [{"role": "user", "content": "wrong"},
                                   {"role": "tool", "content": "4"}])
    assert tok.decode(delta) == "\n\nUser: wrong\n\nTool: 4\n\nAssistant:"
    assert first.conversation.messages[1:] == [
        {"role": "assistant", "content": "5"}, {"role": "user", "content": "wrong"},
        {"role": "tool", "content": "4"}]
