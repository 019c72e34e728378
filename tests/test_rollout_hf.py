"""The transformers rollout engine on a tiny random Llama: shapes, log-probs against a
full recomputation, left padding, stop strings, truncation, determinism."""

from __future__ import annotations

import pytest
import torch

from rlvr.rollout.base import SamplingParams
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.rollout.sampling import filter_logits
from rlvr.training.tiny import TinyModelSpec, char_tokenizer, tiny_llama

PROMPTS = ["<s>12+34=", "<s>7+5=", "<s>999+1000=", "<s>hello"]


@pytest.fixture(scope="module", params=[True, False], ids=["fast-decode", "transformers-forward"])
def engine(request) -> HFRolloutEngine:
    """Both decoding paths: rlvr's Llama decode forward and transformers' own."""
    torch.manual_seed(0)
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, TinyModelSpec(hidden_size=48, intermediate_size=96,
                                                num_layers=2, num_heads=4), seed=3)
    return HFRolloutEngine(model.eval(), tokenizer, fast_decode=request.param)


def recomputed_logprobs(engine: HFRolloutEngine, prompt_ids, token_ids, temperature):
    ids = torch.tensor([prompt_ids + token_ids])
    with torch.no_grad():
        logits = engine.model(input_ids=ids).logits[0].double() / temperature  # [L, V]
    logp = torch.log_softmax(logits, -1)
    start = len(prompt_ids) - 1
    return [logp[start + j, t].item() for j, t in enumerate(token_ids)]


def test_shapes_and_fields(engine):
    out = engine.generate(PROMPTS, 3, SamplingParams(max_new_tokens=6, temperature=1.0, seed=1))
    assert [len(group) for group in out] == [3] * len(PROMPTS)
    for prompt, group in zip(PROMPTS, out):
        for c in group:
            assert c.prompt_ids == engine.tokenizer(prompt, add_special_tokens=False)["input_ids"]
            assert 1 <= len(c.token_ids) <= 6
            assert len(c.logprobs) == len(c.token_ids)
            assert c.finish_reason in ("eos", "length")
            assert c.truncated == (c.finish_reason == "length")
            if c.finish_reason == "length":
                assert len(c.token_ids) == 6 and engine.tokenizer.eos_token_id not in c.token_ids
            else:
                assert c.token_ids[-1] == engine.tokenizer.eos_token_id
            assert c.text == engine.tokenizer.decode(c.token_ids, skip_special_tokens=True)


@pytest.mark.parametrize("temperature,top_k,top_p", [(1.0, 0, 1.0), (0.7, 5, 1.0),
                                                      (1.3, 0, 0.8)])
def test_logprobs_match_a_full_forward_pass(engine, temperature, top_k, top_p):
    """Sampler log-probs are log_softmax(logits / T) before filtering, at every position,
    for every row of a left-padded batch."""
    params = SamplingParams(max_new_tokens=8, temperature=temperature, top_k=top_k,
                            top_p=top_p, seed=7)
    for group in engine.generate(PROMPTS, 2, params):
        for c in group:
            expected = recomputed_logprobs(engine, c.prompt_ids, c.token_ids, temperature)
            assert c.logprobs == pytest.approx(expected, abs=2e-5)


def test_batched_greedy_equals_one_prompt_at_a_time(engine):
    """Left padding and position ids must not change what a row generates."""
    params = SamplingParams(max_new_tokens=10, temperature=0.0)
    batched = engine.generate(PROMPTS, 1, params)
    for prompt, group in zip(PROMPTS, batched):
        alone = engine.generate([prompt], 1, params)[0][0]
        assert group[0].token_ids == alone.token_ids
        assert group[0].logprobs == []  # greedy carries no sampling distribution


def test_greedy_is_deterministic_and_seeded_sampling_repeats(engine):
    greedy = SamplingParams(max_new_tokens=8, temperature=0.0)
    assert [c.token_ids for g in engine.generate(PROMPTS, 2, greedy) for c in g] == \
        [c.token_ids for g in engine.generate(PROMPTS, 2, greedy) for c in g]
    sample = SamplingParams(max_new_tokens=8, temperature=1.0, seed=11)
    first = [c.token_ids for g in engine.generate(PROMPTS, 4, sample) for c in g]
    assert first == [c.token_ids for g in engine.generate(PROMPTS, 4, sample) for c in g]
    other = SamplingParams(max_new_tokens=8, temperature=1.0, seed=12)
    assert first != [c.token_ids for g in engine.generate(PROMPTS, 4, other) for c in g]


def test_generate_is_tokenize_then_generate_ids(engine):
    params = SamplingParams(max_new_tokens=8, temperature=1.0, seed=21)
    by_text = engine.generate(PROMPTS, 3, params)
    ids = [engine.tokenizer(p, add_special_tokens=False)["input_ids"] for p in PROMPTS]
    by_ids = engine.generate_ids(ids, 3, params)
    assert [[(c.prompt_ids, c.token_ids, c.logprobs, c.text) for c in g] for g in by_text] == \
        [[(c.prompt_ids, c.token_ids, c.logprobs, c.text) for c in g] for g in by_ids]


def test_generate_ids_continues_token_ids_no_text_makes(engine):
    """An episode's context (sampled tokens, EOS, the environment's tokens) goes to the
    model as it is: greedy continues it as the model's own full forward says."""
    tok, eos = engine.tokenizer, engine.tokenizer.eos_token_id
    contexts = [[tok.bos_token_id] + tok("12+34=", add_special_tokens=False)["input_ids"]
                + [eos] + tok("again:", add_special_tokens=False)["input_ids"],
                [tok.bos_token_id, eos, eos]]
    out = engine.generate_ids(contexts, 1, SamplingParams(max_new_tokens=6, temperature=0.0))
    for ids, group in zip(contexts, out):
        expected = list(ids)
        with torch.no_grad():
            for _ in range(6):
                expected.append(int(engine.model(input_ids=torch.tensor([expected]))
                                    .logits[0, -1].argmax()))
                if expected[-1] == eos:
                    break
        assert group[0].prompt_ids == ids and group[0].token_ids == expected[len(ids):]


def test_top_k_one_is_greedy(engine):
    greedy = engine.generate(PROMPTS, 1, SamplingParams(max_new_tokens=8, temperature=0.0))
    top1 = engine.generate(PROMPTS, 2, SamplingParams(max_new_tokens=8, temperature=1.0,
                                                      top_k=1, seed=3))
    for g, s in zip(greedy, top1):
        assert all(c.token_ids == g[0].token_ids for c in s)


def test_stop_string_cuts_text_and_ends_generation(engine):
    params = SamplingParams(max_new_tokens=12, temperature=0.0)
    free = engine.generate(PROMPTS, 1, params)
    for prompt, group in zip(PROMPTS, free):
        text = group[0].text
        if len(text) < 4:
            continue
        stop = text[2:4]
        cut = engine.generate([prompt], 1, SamplingParams(max_new_tokens=12, temperature=0.0,
                                                         stop=(stop, "never-here")))[0][0]
        assert cut.finish_reason == "stop" and not cut.truncated
        assert cut.text == text[:text.find(stop)]
        # the tokens end at the one that completed the stop string
        assert cut.token_ids == group[0].token_ids[:len(cut.token_ids)]
        decoded = engine.tokenizer.decode(cut.token_ids, skip_special_tokens=True)
        assert stop in decoded and stop not in engine.tokenizer.decode(
            cut.token_ids[:-1], skip_special_tokens=True)
        break
    else:
        pytest.fail("no prompt produced enough text to test a stop string")


def test_truncation_flag_at_max_new_tokens(engine):
    out = engine.generate(PROMPTS, 4, SamplingParams(max_new_tokens=2, temperature=1.0, seed=5))
    flat = [c for g in out for c in g]
    for c in flat:
        ended = engine.tokenizer.eos_token_id in c.token_ids
        assert c.truncated == (not ended)
        assert len(c.token_ids) == (2 if c.truncated else c.token_ids.index(
            engine.tokenizer.eos_token_id) + 1)
    assert any(c.truncated for c in flat)


def test_filter_logits_by_hand():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert torch.isinf(filter_logits(logits, top_k=2)).tolist() == [[False, False, True, True]]
    # top_p=0.8: 0.5 (mass above 0) and 0.3 (mass above 0.5) kept; 0.15 has 0.8 above it.
    assert torch.isinf(filter_logits(logits, top_p=0.8)).tolist() == [[False, False, True, True]]
    assert torch.isinf(filter_logits(logits, top_p=0.81)).tolist() == [[False, False, False, True]]
    assert torch.isinf(filter_logits(logits, top_p=0.1)).tolist() == [[False, True, True, True]]


STOPS = ("1", "a", "e", "=", "0")  # common characters: rows end at different steps


def test_rows_ending_at_different_steps_keep_exact_logprobs(engine):
    """With stop strings most rows end early and are dropped from the batch and the KV
    cache; the rows that go on must be unaffected."""
    params = SamplingParams(max_new_tokens=12, temperature=1.0, stop=STOPS, seed=21)
    out = [c for g in engine.generate(PROMPTS * 4, 4, params) for c in g]
    lengths = {len(c.token_ids) for c in out}
    assert len(lengths) >= 4  # rows really did end at different steps
    for c in out:
        assert c.logprobs == pytest.approx(
            recomputed_logprobs(engine, c.prompt_ids, c.token_ids, 1.0), abs=2e-5)


def test_greedy_with_early_stops_matches_one_prompt_at_a_time(engine):
    params = SamplingParams(max_new_tokens=12, temperature=0.0, stop=STOPS)
    prompts = PROMPTS + ["<s>3", "<s>77+1", "<s>xyz"]
    batched = engine.generate(prompts, 1, params)
    for prompt, group in zip(prompts, batched):
        alone = engine.generate([prompt], 1, params)[0][0]
        assert (group[0].token_ids, group[0].text, group[0].finish_reason) == \
            (alone.token_ids, alone.text, alone.finish_reason)
