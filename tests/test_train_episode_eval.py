"""Held-out evaluation of multi-turn runs (rlvr.training.episode_eval): one greedy
episode per record in the run's environment, its numbers computed here by hand from a
scripted guesser; a one-turn run's evaluation is the one-turn code path unchanged."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from rlvr.data.prompts import PromptRenderer
from rlvr.data.records import TaskRecord
from rlvr.environments.registry import environment_factory
from rlvr.episodes.base import EpisodeLimits
from rlvr.training.evaluate import eval_grader, eval_plan, evaluate, held_out_evaluator
from rlvr.training.episode_eval import evaluate_episodes
from rlvr.training.tiny import char_tokenizer

from episode_helpers import ScriptedIdsEngine, plain_turns
from eval_helpers import ScriptedEngine
from train_helpers import tiny_config

GUESSES = ["4", "6", "7", "8"]  # turn k's guess, whatever the hints said
HIDDEN = [4, 6, 2, 8, 5]
RECORDS = [TaskRecord("Guess 1..8.", str(n), "exact", f"g{n}") for n in HIDDEN]


class NoPool:
    """Every episode here is graded by its environment: the pool is never asked."""

    def verify(self, cases):
        assert not list(cases)
        return []


class GreedyScripted(ScriptedIdsEngine):
    """The scripted guesser, recording each call's temperature."""

    def generate_ids(self, prompt_ids, n, params):
        self.temperatures = getattr(self, "temperatures", []) + [params.temperature]
        return super().generate_ids(prompt_ids, n, params)


def test_greedy_episodes_by_hand():
    tokenizer = char_tokenizer()
    engine = GreedyScripted(tokenizer, lambda call, i, j: GUESSES[call])
    limits = EpisodeLimits(max_turns=4, max_tokens=200, step_timeout_s=5)
    make_env = environment_factory("guess_number", {"turn_cost": 0.1}, limits)
    result = evaluate_episodes(engine, plain_turns(tokenizer), make_env, NoPool(), RECORDS,
                               max_turns=4, max_new_tokens=4, seed=3)
    # 4: turn 1; 6: turn 2 (4, higher, 6); 8: turn 4; 2 and 5: never (4 6 7 8 each time)
    row = result["row"]
    assert row["greedy/accuracy"] == pytest.approx(3 / 5) == result["accuracy"]
    assert row["greedy/score"] == pytest.approx((1.0 + 0.9 + 0.7) / 5)
    assert [row[f"greedy/solved_turn_{k}"] for k in (1, 2, 3, 4)] == \
        pytest.approx([1 / 5, 1 / 5, 0.0, 1 / 5])
    assert row["greedy/solved_after_feedback"] == pytest.approx(2 / 5)
    assert row["greedy/turns"] == pytest.approx((1 + 2 + 4 + 4 + 4) / 5)
    assert row["greedy/length"] == pytest.approx((2 + 4 + 8 + 8 + 8) / 5)  # digit + EOS
    assert row["greedy/errors"] == 0.0 and row["count"] == 5.0
    assert set(engine.temperatures) == {0.0}
    assert [len(call[0]) for call in engine.calls] == [5, 4, 3, 3]  # live episodes per turn
    answers = result["answers"]
    assert [a["passed"] for a in answers] == [True, True, False, True, False]
    assert [a["completion"] for a in answers] == ["4", "6", "8", "8", "8"]
    second = answers[1]["messages"]
    assert [m["content"] for m in second[1:]] == ["4", "higher", "6"]
    json.dumps(answers)  # written to evals/step-NNNNNN.jsonl as they are


def test_one_turn_runs_keep_the_one_turn_evaluation():
    renderer = PromptRenderer(SimpleNamespace(bos_token=""), "plain", "{prompt}")
    records = [TaskRecord("1+1", "2", "exact", "p1"), TaskRecord("2+2", "4", "exact", "p2")]
    engine = ScriptedEngine(greedy={"1+1": "Answer: 2", "2+2": "Answer: 5"})

    class Pool:
        def verify(self, cases):
            from rlvr.verifiers.exact import ExactVerifier
            return [ExactVerifier().verify(c.completion, c.reference) for c in cases]

    cfg = tiny_config()
    assert cfg.episodes.max_turns == 1
    now = held_out_evaluator(cfg, engine, renderer, Pool(), records, make_env=None)()
    verifier, options = eval_grader(cfg)
    before = evaluate(engine, renderer, Pool(), records, verifier=verifier, options=options,
                      plan=eval_plan(cfg))
    assert now["accuracy"] == pytest.approx(0.5)  # p1 right, p2 wrong
    for result in (now, before):
        result.pop("seconds")
        result["row"].pop("greedy/length", None)
    assert now == before


def test_tool_calls_per_episode_in_the_row():
    from rlvr.training.episode_eval import episode_row

    episodes = [SimpleNamespace(model_tokens=10, turns=2, end_reason="done",
                                info={"tool_calls": calls}) for calls in (1, 0, 3)]
    episodes.append(SimpleNamespace(model_tokens=4, turns=1, end_reason="done", info={}))
    row = episode_row(episodes, [True, False, True, False], [1.0, 0.0, 1.0, 0.0], max_turns=2)
    assert row["greedy/tool_calls"] == pytest.approx((1 + 0 + 3 + 0) / 4)
