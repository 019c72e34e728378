"""Environments built from the `verifiers` library's own classes (its classic API), for
tests/test_verifiers_env.py: loaded by name ("verifiers_env_fixtures") as an operator's
config names them."""

from __future__ import annotations

import verifiers.legacy as vf
from datasets import Dataset

# (question, answer): a + b
SUMS = [(2, 3), (10, 7), (4, 4), (21, 13), (6, 9), (30, 12), (5, 8), (11, 11)]


def sums_dataset(n: int) -> Dataset:
    return Dataset.from_list([{"question": f"What is {a} + {b}?", "answer": str(a + b),
                               "info": {"a": a, "b": b}} for a, b in SUMS[:n]])


def correct_answer(parser, completion, answer) -> float:
    """1 when the parsed <answer> equals the row's answer."""
    return 1.0 if parser.parse_answer(completion) == answer else 0.0


async def brief(completion) -> float:
    """An async reward function: 1 when the last assistant message is under 40 chars."""
    return 1.0 if len(completion[-1].content) < 40 else 0.0


def uses_info(completion, info) -> float:
    """Reads the row's info column: 1 when the text names the first operand."""
    return 1.0 if str(info["a"]) in completion[-1].content else 0.0


def load_environment(n: int = 8, weights: tuple = (1.0,), system_prompt: str = "Answer "
                     "inside <answer></answer>.") -> vf.SingleTurnEnv:
    """A SingleTurnEnv over `n` sums with an XMLParser and a rubric of `len(weights)`
    functions (correct_answer, brief, uses_info: in that order)."""
    parser = vf.XMLParser(["answer"], answer_field="answer")
    funcs = [correct_answer, brief, uses_info][:len(weights)]
    rubric = vf.Rubric(funcs=funcs, weights=list(weights), parser=parser)
    return vf.SingleTurnEnv(dataset=sums_dataset(n), system_prompt=system_prompt,
                            parser=parser, rubric=rubric)


class Hint(vf.MultiTurnEnv):
    """A multi-turn environment: a wrong answer gets "try again" (at most 3 turns); the
    rollout ends when the parsed answer is right."""

    async def env_response(self, messages, state, **kwargs):
        return [{"role": "user", "content": "try again"}]

    @vf.stop
    async def solved(self, state) -> bool:
        trajectory = state["trajectory"]
        if not trajectory:
            return False
        return self.parser.parse_answer(trajectory[-1]["completion"]) == state["answer"]


def load_hint(n: int = 4) -> Hint:
    parser = vf.XMLParser(["answer"], answer_field="answer")
    rubric = vf.Rubric(funcs=[correct_answer], weights=[1.0], parser=parser)
    return Hint(dataset=sums_dataset(n), parser=parser, rubric=rubric, max_turns=3)


def load_group_rubric() -> vf.SingleTurnEnv:
    """A rubric with a group-level function (rlvr refuses it)."""
    def relative(completions, **kwargs) -> list:
        return [0.0] * len(completions)
    return vf.SingleTurnEnv(dataset=sums_dataset(2), rubric=vf.Rubric(funcs=[relative]))


def not_an_environment():
    return "nope"
