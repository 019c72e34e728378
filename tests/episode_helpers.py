"""A scripted engine over token ids and toy environments, for the episode runner tests."""

from __future__ import annotations

import time

from rlvr.data.prompts import PromptRenderer
from rlvr.data.records import TaskRecord
from rlvr.episodes.base import EpisodeLimits, Reply
from rlvr.episodes.render import TurnRenderer
from rlvr.rollout.base import Completion
from rlvr.training.tiny import char_tokenizer

LOGPROB = -0.5  # every scripted token's log-prob


def plain_turns(tokenizer=None) -> TurnRenderer:
    return TurnRenderer(PromptRenderer(tokenizer or char_tokenizer(), style="plain",
                                       template="{bos}{prompt}"))


def ids(tokenizer, text: str) -> list[int]:
    return tokenizer(text, add_special_tokens=False)["input_ids"]


class ScriptedIdsEngine:
    """Answers `script(call, prompt_index, sample_index)` (text) followed by EOS, cut at
    params.max_new_tokens; records (contexts, n, max_new_tokens, seed) of every call."""

    def __init__(self, tokenizer, script):
        self.tokenizer, self.script, self.calls = tokenizer, script, []

    def generate_ids(self, prompt_ids, n, params):
        call = len(self.calls)
        self.calls.append(([list(p) for p in prompt_ids], n, params.max_new_tokens,
                           params.seed))
        out = []
        for i, prompt in enumerate(prompt_ids):
            group = []
            for j in range(n):
                text = self.script(call, i, j)
                tokens = ids(self.tokenizer, text) + [self.tokenizer.eos_token_id]
                reason = "eos"
                if len(tokens) > params.max_new_tokens:
                    tokens, reason = tokens[:params.max_new_tokens], "length"
                group.append(Completion(list(prompt), tokens, [LOGPROB] * len(tokens),
                                        self.tokenizer.decode(tokens, skip_special_tokens=True),
                                        reason))
            out.append(group)
        return out

    def sync_weights(self, model):
        pass


class TextOnlyEngine(ScriptedIdsEngine):
    """An engine of text prompts only (no generate_ids), as older fakes are."""

    def generate(self, prompts, n, params):
        return ScriptedIdsEngine.generate_ids(
            self, [ids(self.tokenizer, p) for p in prompts], n, params)

    def __getattribute__(self, name):
        if name == "generate_ids":
            raise AttributeError(name)
        return object.__getattribute__(self, name)


class Again:
    """Says "again" after the first turn; on the second, reward 1 when the model
    answered the record's reference, else 0 (done). One tool call a turn."""

    tools = ()

    def __init__(self, limits=EpisodeLimits(max_turns=3, max_tokens=64, step_timeout_s=5)):
        self.limits, self.turn, self.closed = limits, 0, False

    def reset(self, task: TaskRecord):
        self.task = task
        return [{"role": "user", "content": task.prompt}]

    def step(self, turn: str) -> Reply:
        self.turn += 1
        if self.turn == 1:
            return Reply([{"role": "user", "content": "again"}], info={"tool_calls": 1})
        return Reply(done=True, reward=float(turn == self.task.reference),
                     info={"tool_calls": 1, "tool_errors": int(turn != self.task.reference)})

    def close(self):
        self.closed = True


class Faulty(Again):
    """Again, except for the fault its record's id names."""

    def reset(self, task):
        if task.id == "reset_raises":
            raise RuntimeError("no sandbox")
        return super().reset(task)

    def step(self, turn):
        kind = self.task.id
        if kind == "raises":
            raise ValueError("parser crashed")
        if kind == "hangs":
            time.sleep(3)
        if kind == "bad_role":
            return Reply([{"role": "assistant", "content": "I answer for you"}])
        if kind == "not_a_reply":
            return {"observation": []}
        if kind == "long":
            return Reply([{"role": "user", "content": "x" * 200}])
        if kind == "nan_reward":
            return Reply(done=True, reward=float("nan"))
        return super().step(turn)
