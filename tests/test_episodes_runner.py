"""The episode runner (rlvr.episodes.runner) with a scripted engine over the character
tokenizer: one engine call per turn for the whole batch, the token layout and loss mask
written out by hand, the limits, and every fault ending only its own episode."""

from __future__ import annotations

import time

import pytest
import torch

from rlvr.data.records import TaskRecord
from rlvr.episodes.base import EpisodeLimits
from rlvr.episodes.runner import EpisodeError, run_episodes
from rlvr.episodes.single_turn import SingleTurn, single_turn
from rlvr.rollout.base import SamplingParams
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.training.tiny import TinyModelSpec, char_tokenizer, tiny_llama
from episode_helpers import (LOGPROB, Again, Faulty, ScriptedIdsEngine, TextOnlyEngine, ids,
                             plain_turns)

TOK = char_tokenizer()
EOS = TOK.eos_token_id
DELTA = ids(TOK, "\n\nUser: again\n\nAssistant:")  # the plain-text protocol, by hand
PARAMS = SamplingParams(max_new_tokens=8, temperature=1.0, seed=5)


def record(prompt="1+1=", reference="b", id="p"):
    return TaskRecord(prompt, reference, "exact", id)


def test_two_turns_one_call_per_turn_and_the_layout_by_hand():
    # turn 1: prompt i, sample j answers "x{i}{j}"; turn 2: every episode answers "b"
    script = lambda call, i, j: f"x{i}{j}" if call == 0 else "b"  # noqa: E731
    engine = ScriptedIdsEngine(TOK, script)
    envs = []
    make = lambda r: envs.append(Again()) or envs[-1]  # noqa: E731
    out = run_episodes(engine, plain_turns(TOK), make, [record(id="a"), record("2+2=", id="c")],
                       2, PARAMS)

    prompts = [[TOK.bos_token_id] + ids(TOK, "1+1="), [TOK.bos_token_id] + ids(TOK, "2+2=")]
    first, second = engine.calls
    assert first == (prompts, 2, 8, 5)  # the groups' shared prompts, n = G, the draw's seed
    turn1 = {(i, j): ids(TOK, f"x{i}{j}") + [EOS] for i in range(2) for j in range(2)}
    contexts = [prompts[i] + turn1[i, j] + DELTA for i in range(2) for j in range(2)]
    assert second == (contexts, 1, 8, 5 + 1_000_003)  # every episode of the batch, n = 1
    for i, group in enumerate(out):
        for j, e in enumerate(group):
            answer = ids(TOK, "b") + [EOS]
            c = e.completion
            assert c.prompt_ids == prompts[i]
            assert c.token_ids == turn1[i, j] + DELTA + answer
            assert c.loss_mask == [1] * 4 + [0] * len(DELTA) + [1] * 2
            assert c.logprobs == [LOGPROB] * 4 + [0.0] * len(DELTA) + [LOGPROB] * 2
            assert (e.reward, e.end_reason, e.turns, e.final_text, c.text) == \
                (1.0, "done", 2, "b", "b")
            assert e.messages == [{"role": "user", "content": ["1+1=", "2+2="][i]},
                                  {"role": "assistant", "content": f"x{i}{j}"},
                                  {"role": "user", "content": "again"},
                                  {"role": "assistant", "content": "b"}]
            assert e.info["tool_calls"] == 2 and e.info["tool_errors"] == 0
            assert e.info["turn_rewards"] == [None, 1.0]
            assert (e.model_tokens, e.env_tokens) == (6, len(DELTA))
    assert len(envs) == 4 and all(env.closed for env in envs)  # a fresh one per episode


def test_faults_end_only_their_episode_with_reward_zero():
    kinds = ["ok", "raises", "hangs", "bad_role", "not_a_reply", "long", "nan_reward",
             "reset_raises", "factory_raises"]
    limits = EpisodeLimits(max_turns=3, max_tokens=64, step_timeout_s=0.5)

    def make(r):
        if r.id == "factory_raises":
            raise KeyError("no such option")
        return Faulty(limits)

    engine = ScriptedIdsEngine(TOK, lambda call, i, j: "b")
    began = time.perf_counter()
    out = run_episodes(engine, plain_turns(TOK), make, [record(id=k) for k in kinds], 1, PARAMS)
    assert time.perf_counter() - began < 2.5  # the hanging step was waited for 0.5 s, once
    got = {k: (g[0].reward, g[0].end_reason) for k, g in zip(kinds, out)}
    assert got["ok"] == (1.0, "done")
    assert got["raises"] == (0.0, "env_error: ValueError: parser crashed")
    assert got["hangs"] == (0.0, "env_timeout")
    assert got["bad_role"][0] == 0.0 and got["bad_role"][1].startswith(
        "bad_observation: observation: message 0 has role 'assistant'")
    assert got["not_a_reply"] == (0.0, "bad_observation: step returned dict, not a Reply")
    assert got["long"] == (0.0, "max_tokens")  # 200 characters of observation > 64 tokens
    assert got["nan_reward"][1] == "bad_observation: reward nan is not a finite number or None"
    assert got["reset_raises"] == (0.0, "env_error: RuntimeError: no sandbox")
    assert got["factory_raises"] == (0.0, "env_error: KeyError: 'no such option'")
    # an episode that never opened has no tokens (and was not in the turn-1 call)
    assert out[kinds.index("reset_raises")][0].completion.token_ids == []
    assert len(engine.calls[0][0]) == 7
    # the ok episode ran its two turns; the faulted ones stopped after their first
    assert [g[0].turns for g in out] == [2, 1, 1, 1, 1, 1, 1, 0, 0]


@pytest.mark.parametrize("where", ["step", "factory"])
def test_a_remote_environment_that_is_gone_stops_the_run(where):
    """An ExternalFault (a remote environment server that is gone) is not one episode's
    fault: every later episode would fail alike, so it leaves run_episodes (the CLI's
    exit 3, naming the server) instead of ending the episode with reward 0."""
    from rlvr.errors import ExternalFault

    limits = EpisodeLimits(max_turns=3, max_tokens=64, step_timeout_s=5)

    class Gone(ExternalFault):
        pass

    class GoneAtStep(Faulty):
        def step(self, turn):
            raise Gone("environment server http://127.0.0.1:9/ is gone")

    def make(r):
        if where == "factory":
            raise Gone("environment server http://127.0.0.1:9/ is gone")
        return GoneAtStep(limits)

    engine = ScriptedIdsEngine(TOK, lambda call, i, j: "b")
    with pytest.raises(Gone, match="127.0.0.1:9"):
        run_episodes(engine, plain_turns(TOK), make, [record(id="ok")], 1, PARAMS)


def test_max_turns_sums_the_turn_rewards_or_leaves_grading_to_the_verifier():
    class Endless(Again):
        def __init__(self, rewards):
            super().__init__(EpisodeLimits(max_turns=2, max_tokens=64, step_timeout_s=5))
            self.rewards = iter(rewards)

        def step(self, turn):
            from rlvr.episodes.base import Reply
            return Reply([{"role": "user", "content": "again"}], reward=next(self.rewards))

    engine = ScriptedIdsEngine(TOK, lambda call, i, j: "b")
    scored = run_episodes(engine, plain_turns(TOK), lambda r: Endless([0.5, 0.25]),
                          [record()], 2, PARAMS)
    ungraded = run_episodes(engine, plain_turns(TOK), lambda r: Endless([None, None]),
                            [record()], 2, PARAMS)
    assert [(e.reward, e.end_reason, e.turns) for e in scored[0]] == [(0.75, "max_turns", 2)] * 2
    assert [(e.reward, e.end_reason) for e in ungraded[0]] == [(None, "max_turns")] * 2


def test_the_token_budget_caps_each_turn_and_ends_the_episode():
    # 12 tokens: turn 1 "xyz" + EOS (4), the observation (len(DELTA) > 8) no longer fits
    limits = EpisodeLimits(max_turns=3, max_tokens=12, step_timeout_s=5)
    engine = ScriptedIdsEngine(TOK, lambda call, i, j: "xyz")
    out = run_episodes(engine, plain_turns(TOK), lambda r: Again(limits), [record()], 1, PARAMS)
    assert engine.calls[0][2] == 8  # min(max_new_tokens, 12 left)
    e = out[0][0]
    assert (e.reward, e.end_reason, e.turns) == (0.0, "max_tokens", 1)
    assert e.completion.token_ids == ids(TOK, "xyz") + [EOS] and e.completion.loss_mask is None

    # a budget smaller than a turn: the call asks for 3 tokens and the turn is cut there
    tight = EpisodeLimits(max_turns=1, max_tokens=3, step_timeout_s=5)
    engine = ScriptedIdsEngine(TOK, lambda call, i, j: "wxyz")
    e = run_episodes(engine, plain_turns(TOK), lambda r: single_turn(r, {}, tight),
                     [record()], 1, PARAMS)[0][0]
    assert engine.calls[0][2] == 3
    assert (e.completion.token_ids, e.completion.finish_reason) == (ids(TOK, "wxy"), "length")
    assert (e.reward, e.end_reason, e.final_text) == (None, "done", "wxy")


def test_first_messages_that_differ_within_a_group_cannot_share_its_samples():
    class Moody(Again):
        count = 0

        def reset(self, task):
            Moody.count += 1
            self.task = task
            return [{"role": "user", "content": "odd" if Moody.count == 2 else task.prompt}]

    engine = ScriptedIdsEngine(TOK, lambda call, i, j: "b")
    out = run_episodes(engine, plain_turns(TOK), lambda r: Moody(), [record()], 2, PARAMS)
    assert [e.end_reason for e in out[0]] == ["done", "bad_observation: first messages "
                                                      "differ from the group's"]
    assert out[0][1].completion.prompt_ids == out[0][0].completion.prompt_ids


def test_an_engine_without_generate_ids_runs_one_turn_and_refuses_more():
    engine = TextOnlyEngine(TOK, lambda call, i, j: "b")
    limits = EpisodeLimits(max_turns=1, max_tokens=8, step_timeout_s=5)
    out = run_episodes(engine, plain_turns(TOK), lambda r: SingleTurn(limits), [record()], 2,
                       PARAMS)
    assert [e.final_text for e in out[0]] == ["b", "b"]
    with pytest.raises(EpisodeError, match="TextOnlyEngine has no generate_ids"):
        run_episodes(engine, plain_turns(TOK), lambda r: Again(), [record()], 2, PARAMS)


def test_single_turn_episodes_are_the_engines_own_completions():
    """The trivial environment samples exactly what `engine.generate` of the rendered
    prompts does, and hands the engine's Completion on as it is (no loss mask)."""
    tok = char_tokenizer()
    model = tiny_llama(tok, TinyModelSpec(hidden_size=32, intermediate_size=64,
                                          num_layers=1, num_heads=2), seed=1)
    engine = HFRolloutEngine(model.eval(), tok)
    records = [record("12+34="), record("7+5=", id="q")]
    turns = plain_turns(tok)
    expected = engine.generate([turns.prompts.render(r) for r in records], 3, PARAMS)
    out = run_episodes(engine, turns, lambda r: single_turn(r, {}, EpisodeLimits(1, 8, 5)),
                       records, 3, PARAMS)
    for group, want in zip(out, expected):
        for e, c in zip(group, want):
            got = e.completion
            assert (got.prompt_ids, got.token_ids, got.text, got.finish_reason) == \
                (c.prompt_ids, c.token_ids, c.text, c.finish_reason)
            assert torch.equal(torch.tensor(got.logprobs), torch.tensor(c.logprobs))
            assert got.loss_mask is None and e.reward is None and e.end_reason == "done"


def test_call_all_deadlines_errors_and_inline_calls():
    import threading

    from rlvr.episodes.calls import call_all

    main = threading.get_ident()
    began = time.perf_counter()
    out = call_all([lambda: 1, lambda: time.sleep(3), lambda: 1 / 0, threading.get_ident],
                   [1.0, 0.2, 1.0, 1.0], [False, False, False, True])
    assert time.perf_counter() - began < 1.5
    assert (out[0].value, out[0].error, out[0].timed_out) == (1, "", False)
    assert out[1].timed_out and out[1].seconds == 0.2
    assert out[2].error == "ZeroDivisionError: division by zero"
    assert out[3].value == main  # inline: called in this thread
