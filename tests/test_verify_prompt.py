"""The verify contract's optional prompt (issue 14): it reaches the verifiers that use
it, through the pool, `rlvr verify`, composites, the trainer, `rlvr eval` and the
adapters; every other verifier is called exactly as before."""

from __future__ import annotations

import json

import pytest
import torch

from cli_helpers import run_cli
from rlvr.adapters.trl import reward_func
from rlvr.adapters.verl import compute_score
from rlvr.data.records import TaskRecord, prompt_text
from rlvr.rollout.base import Completion
from rlvr.training.loop import Groups, rollout_lines
from rlvr.training.rewards import verify_groups
from rlvr.verifiers import Case, VerifierPool
from rlvr.verifiers.base import Verdict, run_verifier

PROMPT = "What is 6 * 75? Give the final answer as \\boxed{ANSWER}."
ECHO = r"To solve \boxed{6 * 75}, we multiply."


class _TwoArguments:
    """A user verifier written against the two-argument protocol."""

    name = "two"

    def verify(self, completion, reference):
        return Verdict.correct(seen=(completion, reference))


class _WantsPrompt:
    name = "wants"
    uses_prompt = True

    def verify(self, completion, reference, prompt=None):
        return Verdict.correct(prompt=prompt)


def test_run_verifier_hands_the_prompt_only_to_verifiers_that_declare_it():
    assert run_verifier(_TwoArguments(), "c", "r", PROMPT).details["seen"] == ("c", "r")
    assert run_verifier(_WantsPrompt(), "c", "r", PROMPT).details["prompt"] == PROMPT
    assert run_verifier(_WantsPrompt(), "c", "r").details["prompt"] is None


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(workers=2) as p:
        yield p


def test_pool_passes_the_prompt_and_others_ignore_it(pool):
    verdicts = pool.verify([
        Case("math", ECHO, "450", {"answer_form": "equivalent"}, prompt=PROMPT),
        Case("math", ECHO, "450", {"answer_form": "equivalent"}),
        Case("exact", "450", "450", prompt=PROMPT),
        Case("r1_math", f"<think>x</think><answer>{ECHO}</answer>", "450",
             prompt=PROMPT),
    ])
    assert verdicts[0].reason == "echoes_prompt"
    assert verdicts[1].passed  # no prompt: equivalent form accepts 6 * 75
    assert verdicts[2].passed
    # the composite hands the prompt to its math component
    assert verdicts[3].details["components"]["math"]["reason"] == "echoes_prompt"


def test_cli_takes_a_prompt_one_off_and_in_batch(tmp_path):
    one = run_cli("verify", "math", "--reference", "450", "--completion", ECHO,
                  "--prompt", PROMPT)
    assert json.loads(one.stdout)["reason"] == "echoes_prompt", one.stderr
    cases = tmp_path / "cases.jsonl"
    cases.write_text(json.dumps({"verifier": "math", "completion": ECHO, "reference": "450",
                                 "options": {"answer_form": "equivalent"}, "prompt": PROMPT})
                     + "\n" + json.dumps({"verifier": "math", "completion": "x",
                                          "reference": "1", "prompt": 5}) + "\n")
    batch = run_cli("verify", "--input", str(cases))
    lines = [json.loads(x) for x in batch.stdout.splitlines()]
    assert lines[0]["reason"] == "echoes_prompt"
    assert lines[1]["score"] is None and "'prompt' must be a string" in lines[1]["error"]


def test_trainer_grades_and_logs_with_the_task_text(pool):
    chat = TaskRecord([{"role": "system", "content": "be brief"},
                       {"role": "user", "content": PROMPT}], "450", "math", "p0",
                      options={"answer_form": "equivalent"})
    assert prompt_text(chat) == PROMPT
    completions = [[Completion([], [1], [0.0], ECHO, "stop"),
                    Completion([], [1], [0.0], r"\boxed{450}", "stop")]]
    verdicts = verify_groups(pool, [chat], [[c.text for c in g] for g in completions])
    assert [v.reason for v in verdicts[0]] == ["echoes_prompt", "correct"]
    groups = Groups([chat], completions, verdicts, torch.tensor([[0.0, 1.0]]), {})
    lines = rollout_lines(3, groups, torch.tensor([[0.0, 1.0]]), torch.tensor([[-1.0, 1.0]]))
    assert [(x["prompt"], x["reference"], x["prompt_id"]) for x in lines] == \
        [(PROMPT, "450", "p0")] * 2


def test_adapters_pass_the_prompt(pool):
    func = reward_func("math", pool=pool, options={"answer_form": "equivalent"})
    rewards = func(prompts=[[{"role": "user", "content": PROMPT}], "Say hi"],
                   completions=[ECHO, ECHO], reference=["450", "450"])
    assert rewards == [0.0, 1.0]
    assert func.last_verdicts[0].reason == "echoes_prompt"
    scored = compute_score("math", ECHO, "450", {"prompt": PROMPT},
                           options={"answer_form": "equivalent"})
    assert scored["score"] == 0.0
    assert compute_score("math", ECHO, "450", {}, options={"answer_form": "equivalent"}
                         )["score"] == 1.0
