"""The HF engine's prefix reuse (rlvr.rollout.prefix_store): a call whose prompts continue
the previous call's rows prefills only the new tokens, and samples what a full
re-prefill samples (log-probs against an engine without reuse and against one full
forward pass, at the engine tests' tolerance), on both decode paths."""

from __future__ import annotations

import pytest
import torch

from rlvr.data.records import TaskRecord
from rlvr.episodes.base import EpisodeLimits, Reply
from rlvr.episodes.runner import run_episodes
from rlvr.rollout.base import SamplingParams
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.rollout.prefix_store import PrefixStore
from rlvr.training.tiny import TinyModelSpec, char_tokenizer, tiny_llama
from episode_helpers import ids, plain_turns

TOK = char_tokenizer()
PROMPTS = ["<s>12+34=", "<s>7+5=", "<s>999+1000="]
OBS = ["ab", "\n\nUser: again\n\nAssistant:", "x"]  # an observation per row, by row
FIRST = SamplingParams(max_new_tokens=8, temperature=1.0, seed=5, keep_prefix=True)
SECOND = SamplingParams(max_new_tokens=8, temperature=1.0, seed=9, keep_prefix=True)
TOL = 2e-5  # as tests/test_rollout_hf.py


@pytest.fixture(scope="module")
def model():
    return tiny_llama(TOK, TinyModelSpec(hidden_size=48, intermediate_size=96, num_layers=2,
                                         num_heads=4), seed=3).eval()


def engines(model, fast):
    return (HFRolloutEngine(model, TOK, fast_decode=fast),
            HFRolloutEngine(model, TOK, fast_decode=fast, reuse_prefix=False))


def full_logprobs(model, prompt_ids, token_ids):
    """The independent reference: one forward pass over prompt + tokens."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt_ids + token_ids])).logits[0].double()
    logp = torch.log_softmax(logits, -1)
    return [logp[len(prompt_ids) - 1 + j, t].item() for j, t in enumerate(token_ids)]


def continued(out):
    """Every row's prompt + sampled ids + its observation: the next turn's prompts."""
    rows = [c for group in out for c in group]
    return [c.prompt_ids + c.token_ids + ids(TOK, OBS[i % len(OBS)]) for i, c in enumerate(rows)]


def assert_same_samples(got, want, model):
    for g, w in zip([c for grp in got for c in grp], [c for grp in want for c in grp]):
        assert (g.prompt_ids, g.token_ids, g.finish_reason) == \
            (w.prompt_ids, w.token_ids, w.finish_reason)
        assert g.logprobs == pytest.approx(w.logprobs, abs=TOL)
        assert g.logprobs == pytest.approx(full_logprobs(model, g.prompt_ids, g.token_ids),
                                           abs=TOL)


@pytest.mark.parametrize("fast", [True, False], ids=["fast-decode", "transformers-forward"])
def test_a_second_turn_prefills_only_its_new_tokens_and_samples_the_same(model, fast):
    reuse, plain = engines(model, fast)
    prompts = [ids(TOK, p) for p in PROMPTS]
    first = [e.generate_ids(prompts, 2, FIRST) for e in (reuse, plain)]
    assert_same_samples(*first, model)
    nxt = continued(first[0])
    before = dict(reuse.prefixes.stats)
    second = [e.generate_ids(nxt, 1, SECOND) for e in (reuse, plain)]
    assert_same_samples(*second, model)
    prefilled = reuse.prefixes.stats["prefilled_tokens"] - before["prefilled_tokens"]
    reused = reuse.prefixes.stats["reused_tokens"] - before["reused_tokens"]
    assert prefilled + reused == sum(len(p) for p in nxt)
    # each row kept its prompt and every sampled token it fed (all but perhaps the last,
    # never fed when the loop ended on it): it prefills its observation and at most one more
    observations = [len(ids(TOK, OBS[i % len(OBS)])) for i in range(len(nxt))]
    assert sum(observations) <= prefilled <= sum(observations) + len(nxt)
    assert plain.prefixes.stats["reused_tokens"] == 0


@pytest.mark.parametrize("fast", [True, False], ids=["fast-decode", "transformers-forward"])
def test_rows_that_continue_and_new_prompts_batch_together(model, fast):
    reuse, plain = engines(model, fast)
    prompts = [ids(TOK, p) for p in PROMPTS]
    first = reuse.generate_ids(prompts, 2, FIRST)
    plain.generate_ids(prompts, 2, FIRST)
    fresh = [ids(TOK, "<s>hello there"), ids(TOK, "<s>3")]
    mixed = [fresh[0]] + continued(first)[:3] + [fresh[1]]
    # the continuing rows sample 2 each here: their kept keys/values serve both samples
    before = dict(reuse.prefixes.stats)
    got, want = (e.generate_ids(mixed, 2, SECOND) for e in (reuse, plain))
    assert_same_samples(got, want, model)
    prefilled, reused = (reuse.prefixes.stats[k] - before[k]
                         for k in ("prefilled_tokens", "reused_tokens"))
    # the new prompts whole; the continuing ones after (at least) their first prompt
    assert reused >= 2 * len(prompts[0]) + len(prompts[1])
    assert prefilled + reused == sum(len(p) for p in mixed)


@pytest.mark.parametrize("fast", [True, False], ids=["fast-decode", "transformers-forward"])
def test_nothing_is_reused_across_new_weights(model, fast):
    reuse, _ = engines(model, fast)
    first = reuse.generate_ids([ids(TOK, p) for p in PROMPTS], 2, FIRST)
    reuse.sync_weights(model)  # the trainer's update: whatever was kept is stale
    reuse.generate_ids(continued(first), 1, SECOND)
    assert reuse.prefixes.stats["reused_tokens"] == 0
    # an in-place change without a sync (torch bumps the parameter's version) as well
    second = reuse.generate_ids(continued(first), 1, SECOND)
    with torch.no_grad():
        model.lm_head.weight.mul_(1.0)
    reuse.generate_ids(continued(second), 1, SECOND)
    assert reuse.prefixes.stats["reused_tokens"] == 0


def test_past_the_budget_rows_prefill_in_full(model):
    small = HFRolloutEngine(model, TOK, prefix_budget_gb=2e-6)  # ~2 KB: a row or two
    plain = HFRolloutEngine(model, TOK, reuse_prefix=False)
    prompts = [ids(TOK, p) for p in PROMPTS]
    first = small.generate_ids(prompts, 2, FIRST)
    plain.generate_ids(prompts, 2, FIRST)
    assert small.prefixes.stats["rows_not_kept"] > 0
    assert small.prefixes.used <= small.prefixes.budget
    got, want = (e.generate_ids(continued(first), 1, SECOND) for e in (small, plain))
    assert_same_samples(got, want, model)


def test_a_call_that_does_not_ask_keeps_nothing(model):
    engine = HFRolloutEngine(model, TOK)
    engine.generate_ids([ids(TOK, p) for p in PROMPTS], 2,
                        SamplingParams(max_new_tokens=4, seed=1))
    assert engine.prefixes.rows == [] and engine.prefixes.used == 0


def test_the_store_matches_the_longest_kept_prefix_and_forgets_the_rest():
    store = PrefixStore(2**20)
    kv = lambda n: torch.zeros(1, 1, n, 2)  # noqa: E731 [layers, kv, L, D]
    for row in ([1, 2], [1, 2, 3, 4], [9]):
        store.keep(row, kv(len(row)), kv(len(row)), "w")
    hits = store.match([[1, 2, 3, 4, 5], [1, 2, 3], [9], [7, 1, 2], [1, 2, 3, 4]], "w")
    assert [h.ids if h else None for h in hits] == [[1, 2, 3, 4], [1, 2], [9], None,
                                                    [1, 2, 3, 4]]
    assert store.rows == [] and store.match([[1, 2, 3]], "w") == [None]  # forgotten
    store.keep([1, 2], kv(2), kv(2), "w")
    assert store.match([[1, 2, 3]], "other weights") == [None]


class ThreeTurns:
    """Says "again" twice, then ends the episode."""

    tools = ()
    limits = EpisodeLimits(max_turns=3, max_tokens=120, step_timeout_s=5)

    def __init__(self):
        self.turn = 0

    def reset(self, task):
        return [{"role": "user", "content": task.prompt}]

    def step(self, turn):
        self.turn += 1
        if self.turn == 3:
            return Reply(done=True, reward=1.0)
        return Reply([{"role": "user", "content": "again"}])

    def close(self):
        pass


@pytest.mark.parametrize("fast", [True, False], ids=["fast-decode", "transformers-forward"])
def test_three_turn_episodes_are_the_same_with_and_without_reuse(model, fast):
    records = [TaskRecord("12+34=", "46", "exact", "a"), TaskRecord("7+5=", "12", "exact", "b")]
    params = SamplingParams(max_new_tokens=6, temperature=1.0, seed=11)
    pair = engines(model, fast)
    out = [run_episodes(e, plain_turns(TOK), lambda r: ThreeTurns(), records, 3, params)
           for e in pair]
    assert pair[0].prefixes.stats["reused_tokens"] > 0 == pair[1].prefixes.stats["reused_tokens"]
    assert pair[0].prefixes.rows == []  # freed when the episodes ended
    turns = 0
    for got, want in zip(*(sum(o, []) for o in out)):
        g, w = got.completion, want.completion
        assert (g.prompt_ids, g.token_ids, g.loss_mask, got.turns, got.end_reason) == \
            (w.prompt_ids, w.token_ids, w.loss_mask, want.turns, want.end_reason)
        assert g.logprobs == pytest.approx(w.logprobs, abs=TOL)
        turns += got.turns
    assert turns > len(records) * 3  # later turns really ran


def test_vllm_is_started_with_prefix_caching_as_the_config_says():
    """vLLM's automatic prefix caching is its prefix reuse: passed explicitly from
    sampling.reuse_prefix (on by default), not left to vLLM's default."""
    from rlvr.rollout.vllm.engine import VLLMSettings
    from rlvr.rollout.vllm.runner import RunnerSettings, llm_kwargs
    from rlvr.training.setup import engine_options
    from train_helpers import tiny_config

    for overrides, on in (((), True), (("sampling.reuse_prefix=false",), False)):
        options = engine_options(tiny_config(*overrides))
        assert (options.reuse_prefix, options.vllm["prefix_caching"]) == (on, on)
        settings = VLLMSettings(**options.vllm)
        kwargs = llm_kwargs(RunnerSettings(model="m", prefix_caching=settings.prefix_caching),
                            {"max_position_embeddings": 64}, on_cpu=True)
        assert kwargs["enable_prefix_caching"] is on and kwargs["max_model_len"] == 64
