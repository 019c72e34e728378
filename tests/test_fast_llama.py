"""rlvr's decode forward for Llama-family models computes what transformers computes:
next-token logits after a left-padded prefill and after every decode step, for grouped
and plain attention, with biases (Qwen2, Llama attention_bias/mlp_bias), after the
weights change in place, and through the rollout engine (same tokens as the
transformers path for the same seed). The decode steps are checked on both of
FastLlama's paths: the native step (rlvr.accel.decode.native_step) and torch's."""

from __future__ import annotations

import pytest
import torch
from transformers import (GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM,
                          MistralConfig, MistralForCausalLM, Qwen2Config, Qwen2ForCausalLM)

from rlvr.accel.decode import native_gemm
from rlvr.rollout.base import SamplingParams
from rlvr.accel.decode.decode_linear import DecodeLinear, onednn_available
from rlvr.accel.decode.fast_llama import FastLlama, supports
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.accel.decode.native_step import NativeStep
from rlvr.training.tiny import char_tokenizer

SMALL = dict(vocab_size=61, hidden_size=32, intermediate_size=48, num_hidden_layers=2,
             num_attention_heads=4, max_position_embeddings=64)


def _llama(**overrides):
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(**{**SMALL, "num_key_value_heads": 2, **overrides})).eval()


def _qwen2():
    torch.manual_seed(0)
    return Qwen2ForCausalLM(Qwen2Config(**SMALL, num_key_value_heads=1)).eval()


MODELS = {"llama-gqa": lambda: _llama(),
          "llama-mha-biases": lambda: _llama(num_key_value_heads=4, attention_bias=True,
                                             mlp_bias=True, rope_theta=500.0),
          "qwen2-mqa": _qwen2}


@pytest.fixture(params=["native", "torch"])
def decode_path(request, monkeypatch):
    """Which FastLlama decode step runs: the native one, or torch's (as without a C
    compiler, with RLVR_NATIVE_KERNELS=0 or for more rows than the native step takes)."""
    if request.param == "torch":
        monkeypatch.setattr(NativeStep, "bind", classmethod(lambda cls, *args, **kw: None))
    elif native_gemm.load() is None:
        pytest.skip("native kernels unavailable here (no C compiler or RLVR_NATIVE_KERNELS=0)")
    return request.param


def _assert_path(fast: FastLlama, decode_path: str) -> None:
    assert (fast._native is not None) == (decode_path == "native")


def _left_padded(rows: list[list[int]]):
    width = max(map(len, rows))
    ids = torch.zeros((len(rows), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, r in enumerate(rows):
        ids[i, width - len(r):] = torch.tensor(r)
        mask[i, width - len(r):] = 1
    return ids, mask, (mask.cumsum(-1) - 1).clamp(min=0)


def _reference_next_logits(model, sequence: list[int]) -> torch.Tensor:
    """transformers' logits for the token after `sequence` (one row, no cache)."""
    with torch.no_grad():
        return model(input_ids=torch.tensor([sequence])).logits[0, -1]  # [V]


@pytest.mark.parametrize("name", MODELS)
def test_prefill_and_steps_match_transformers(name, decode_path):
    model = MODELS[name]()
    prompts = [[5, 9, 13, 2, 7, 30], [11, 4], [8, 8, 40, 1]]
    n, generator = 2, torch.Generator().manual_seed(0)
    fast = FastLlama(model)
    logits = fast.start(*_left_padded(prompts), n=n, max_new_tokens=5)  # [6, V]
    _assert_path(fast, decode_path)
    sequences = [list(p) for p in prompts for _ in range(n)]
    rows = list(range(len(sequences)))
    for step in range(5):
        for row, seq in zip(rows, logits):
            torch.testing.assert_close(seq, _reference_next_logits(model, sequences[row]),
                                       rtol=1e-5, atol=1e-5)
        if step == 2:  # drop two rows mid-way, as the engine does for finished rows
            keep = torch.tensor([0, 2, 3, 5])
            fast.keep(keep)
            rows = [rows[i] for i in keep.tolist()]
        token = torch.randint(0, 61, (len(rows),), generator=generator)
        for row, t in zip(rows, token.tolist()):
            sequences[row].append(t)
        logits = fast.step(token, torch.ones(len(rows), dtype=torch.bool))


def test_finished_rows_padding_is_invisible_to_later_tokens(decode_path):
    """A row marked not alive at a step contributes a masked column: the row's later
    logits equal transformers' on the sequence without that token."""
    model = _llama()
    fast = FastLlama(model)
    fast.start(*_left_padded([[3, 4, 5]]), n=1, max_new_tokens=4)
    _assert_path(fast, decode_path)
    fast.step(torch.tensor([7]), torch.tensor([True]))
    fast.step(torch.tensor([0]), torch.tensor([False]))  # padding, not part of the text
    logits = fast.step(torch.tensor([9]), torch.tensor([True]))
    # transformers with the same padding column masked out
    ids = torch.tensor([[3, 4, 5, 7, 0, 9]])
    mask = torch.tensor([[1, 1, 1, 1, 0, 1]])
    positions = torch.tensor([[0, 1, 2, 3, 4, 5]])
    with torch.no_grad():
        expected = model(input_ids=ids, attention_mask=mask, position_ids=positions).logits[0, -1]
    torch.testing.assert_close(logits[0], expected, rtol=1e-5, atol=1e-5)


def test_snapshots_follow_in_place_weight_updates(decode_path):
    model = _llama()
    fast = FastLlama(model)
    prompt = _left_padded([[1, 2, 3, 4]])
    before = fast.start(*prompt, n=1, max_new_tokens=1)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(1.5)  # an optimizer writes in place, as this does
    after = fast.start(*prompt, n=1, max_new_tokens=2)
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after[0], _reference_next_logits(model, [1, 2, 3, 4]),
                               rtol=1e-5, atol=1e-5)
    _assert_path(fast, decode_path)  # a decode step under the new weights too
    stepped = fast.step(torch.tensor([9]), torch.tensor([True]))
    torch.testing.assert_close(stepped[0], _reference_next_logits(model, [1, 2, 3, 4, 9]),
                               rtol=1e-5, atol=1e-5)
    fast.release()  # freed snapshots are rebuilt on the next start
    again = fast.start(*prompt, n=1, max_new_tokens=1)
    torch.testing.assert_close(again, after)


def test_supports_only_what_it_reproduces():
    assert supports(_llama()) and supports(_qwen2())
    assert not supports(_llama(hidden_act="gelu"))
    assert not supports(GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=20)))
    windowed = MistralForCausalLM(MistralConfig(**SMALL, num_key_value_heads=2, sliding_window=8))
    assert not supports(windowed)
    with pytest.raises(ValueError, match="not a supported"):
        FastLlama(windowed)


@pytest.mark.parametrize("use_onednn", [True, False])
def test_decode_linear_equals_f_linear(use_onednn):
    if use_onednn and not onednn_available():
        pytest.skip("this torch build has no oneDNN linear ops")
    generator = torch.Generator().manual_seed(0)
    weight, bias = torch.randn(70, 33, generator=generator), torch.randn(70, generator=generator)
    layer = DecodeLinear(weight, bias, use_onednn=use_onednn)
    for rows in (1, 8, 37):
        x = torch.randn(rows, 33, generator=generator)
        torch.testing.assert_close(layer(x), x @ weight.T + bias, rtol=1e-5, atol=1e-5)
    weight.add_(1.0)  # a snapshot: later changes to the source do not reach it
    x = torch.randn(2, 33, generator=generator)
    torch.testing.assert_close(layer(x), x @ (weight - 1.0).T + bias, rtol=1e-5, atol=1e-5)


def _tiny_engine_model():
    """A character tokenizer and a 2-layer GQA Llama over it, seeded."""
    tokenizer = char_tokenizer()
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=48, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)).eval()
    return tokenizer, model


def test_engine_samples_the_same_tokens_on_both_paths(decode_path):
    tokenizer, model = _tiny_engine_model()
    prompts = ["<s>12+34=", "<s>7+5=", "<s>hello there"]
    params = SamplingParams(max_new_tokens=12, temperature=1.0, seed=5, stop=("9",))
    engine = HFRolloutEngine(model, tokenizer, fast_decode=True)
    fast = engine.generate(prompts, 3, params)
    _assert_path(engine._fast, decode_path)
    slow = HFRolloutEngine(model, tokenizer, fast_decode=False).generate(prompts, 3, params)
    for group_fast, group_slow in zip(fast, slow):
        for a, b in zip(group_fast, group_slow):
            assert (a.token_ids, a.finish_reason, a.text) == (b.token_ids, b.finish_reason, b.text)
            torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs),
                                       rtol=1e-5, atol=1e-5)


def test_lora_adapters_are_folded_into_the_snapshot(decode_path):
    from rlvr.models.lora import LoraConfig, apply_lora

    model = apply_lora(_llama(), LoraConfig(rank=4, alpha=8, target_modules=["all-linear"]))
    with torch.no_grad():  # peft starts B at zero; give the adapters a real effect
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    model.eval()
    assert supports(model)
    fast = FastLlama(model)
    sequence = [4, 8, 15, 16, 23, 42]
    logits = fast.start(*_left_padded([sequence]), n=1, max_new_tokens=2)
    with_adapters = _reference_next_logits(model, sequence)
    torch.testing.assert_close(logits[0], with_adapters, rtol=1e-5, atol=1e-5)
    _assert_path(fast, decode_path)
    stepped = fast.step(torch.tensor([7]), torch.tensor([True]))
    torch.testing.assert_close(stepped[0], _reference_next_logits(model, sequence + [7]),
                               rtol=1e-5, atol=1e-5)
    with model.disable_adapter():
        without = _reference_next_logits(model, sequence)
    assert not torch.allclose(without, with_adapters, atol=1e-3)  # the adapters mattered


def test_buffer_grows_past_its_first_allocation(decode_path):
    """More new tokens than the buffer first holds (64 columns past the prompt): logits
    after the buffer doubled still match transformers."""
    model = _llama(max_position_embeddings=256)
    fast = FastLlama(model)
    sequence = [3, 1, 4]
    logits = fast.start(*_left_padded([sequence]), n=1, max_new_tokens=100)
    first_capacity = fast.valid.shape[1]
    _assert_path(fast, decode_path)
    generator = torch.Generator().manual_seed(3)
    for _ in range(80):
        token = int(torch.randint(0, 61, (1,), generator=generator))
        sequence.append(token)
        logits = fast.step(torch.tensor([token]), torch.tensor([True]))
    assert fast.valid.shape[1] > first_capacity
    torch.testing.assert_close(logits[0], _reference_next_logits(model, sequence),
                               rtol=1e-4, atol=1e-4)


def test_rms_norm_is_transformers_value_for_value():
    """The decode forward's RMSNorm (fewer dispatches) equals LlamaRMSNorm exactly."""
    model = _llama()
    fast = FastLlama(model)
    norm = model.model.layers[0].input_layernorm
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        norm.weight.normal_(generator=generator)
        for scale in (1e-3, 1.0, 50.0):
            hidden = torch.randn(3, 5, SMALL["hidden_size"], generator=generator) * scale
            assert torch.equal(fast._rms_norm(hidden, norm.weight), norm(hidden))


class _CopyingKeep(FastLlama):
    """FastLlama as it was before the cache was compacted in place: `keep` gathered the
    kept rows into new buffers (the reference the in-place compaction must equal)."""

    def keep(self, rows):
        self.keys, self.values = self.keys[:, rows], self.values[:, rows]
        self.valid, self.next_pos = self.valid[rows], self.next_pos[rows]
        self.row_ids = self.row_ids[rows.cpu()]


def test_keep_compacts_the_cache_in_place(decode_path):
    """Dropping finished rows reuses the key/value buffers (no second copy of the cache
    while the first is alive), and every later logit is bit for bit what gathering into
    new buffers gave: through two drops and a buffer growth past the first 64 columns."""
    model = _llama(max_position_embeddings=256)
    prompts = [[5, 9, 13, 2, 7, 30], [11, 4], [8, 8, 40, 1]]
    ours, reference = FastLlama(model), _CopyingKeep(model)
    generator = torch.Generator().manual_seed(1)
    ids, mask, positions = _left_padded(prompts)
    logits = ours.start(ids, mask, positions, n=3, max_new_tokens=90)  # [9, V]
    expected = reference.start(ids, mask, positions, n=3, max_new_tokens=90)
    _assert_path(ours, decode_path)
    storage = ours.keys.untyped_storage().data_ptr(), ours.values.untyped_storage().data_ptr()
    drops = {3: torch.tensor([0, 2, 3, 5, 6, 8]), 10: torch.tensor([1, 4, 5])}
    for step in range(80):
        assert torch.equal(logits, expected), step
        if step in drops:
            ours.keep(drops[step])
            reference.keep(drops[step])
            if step == 3:  # before the growth: the very buffers of the prefill
                assert (ours.keys.untyped_storage().data_ptr(),
                        ours.values.untyped_storage().data_ptr()) == storage
            assert ours.keys.shape == reference.keys.shape
        token = torch.randint(0, 61, (ours.keys.shape[1],), generator=generator)
        alive = torch.ones(len(token), dtype=torch.bool)
        logits, expected = ours.step(token, alive), reference.step(token, alive)
    assert ours.valid.shape[1] > len(prompts[0]) + 64  # the buffer grew after the drops


def test_engine_drops_the_cache_when_a_call_ends(decode_path):
    """The key/value cache lives for one generate call: afterwards the engine's decode
    forward holds none (it would sit through the update and the evaluation), while the
    kept activations still reach the completions and the next call samples as before."""
    tokenizer, model = _tiny_engine_model()
    engine = HFRolloutEngine(model, tokenizer, fast_decode=True)
    params = SamplingParams(max_new_tokens=8, temperature=1.0, seed=2, keep_activations=True)
    first = engine.generate(["<s>1+2=", "<s>30+4="], 3, params)
    _assert_path(engine._fast, decode_path)
    assert engine._fast.keys is None and engine._fast.values is None
    assert engine._fast.valid is None
    assert all(c.activations is not None for group in first for c in group)
    again = engine.generate(["<s>1+2=", "<s>30+4="], 3, params)
    assert [[c.token_ids for c in g] for g in again] == [[c.token_ids for c in g] for g in first]
