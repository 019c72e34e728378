"""Completion logits with each shared prompt run once (packed tree-attention row, or
prompt + KV cache) equal the plain full-batch forward, values and gradients wrt every
parameter; and the path choice follows the FLOP estimate."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from rlvr.rollout.base import Completion
from rlvr.training.batch import pack
from rlvr.training.shared_prefix import (EXTRA_GRADIENT_FLOPS_PER_PARAM, Group, ModelShape,
                                         choose_path, group_rows, path_costs,
                                         shared_prompt_logits, tree_attention_mask)

VOCAB = 50


def _model(attention: str = "sdpa", kv_heads: int = 2, checkpointing: bool = False):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=kv_heads)
    config._attn_implementation = attention
    model = LlamaForCausalLM(config)
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()  # checkpointing (and its dropped KV cache) only acts in training
    return model


def _batch(spec, order=None, seed=1):
    """spec: [(prompt ids, [completion lengths])]; rows grouped by prompt, then
    reordered by `order`."""
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for prompt, lengths in spec:
        for length in lengths:
            ids = torch.randint(0, VOCAB, (length,), generator=generator).tolist()
            rows.append(Completion(prompt_ids=prompt, token_ids=ids, logprobs=[0.0] * length,
                                   text="", finish_reason="eos"))
    batch = pack(rows, 0, torch.device("cpu"))
    return batch if order is None else batch.rows(torch.tensor(order))


def _assert_matches_full_forward(model, batch, path):
    full = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                 position_ids=batch.position_ids, logits_to_keep=batch.width + 1).logits[:, :-1]
    shared = shared_prompt_logits(model, batch.input_ids, batch.attention_mask,
                                  batch.completion_ids, batch.mask, path=path)
    assert shared.shape == full.shape
    real = batch.mask.bool()  # [B, T]
    assert real.any()
    torch.testing.assert_close(shared[real], full[real], rtol=1e-4, atol=1e-4)
    weights = torch.randn(full[real].shape, generator=torch.Generator().manual_seed(2))  # [K, V]
    params = list(model.parameters())
    grads_full = torch.autograd.grad((full.log_softmax(-1)[real] * weights).sum(), params)
    grads_shared = torch.autograd.grad((shared.log_softmax(-1)[real] * weights).sum(), params)
    for (name, _), a, b in zip(model.named_parameters(), grads_full, grads_shared):
        assert a.abs().sum() > 0, name  # every parameter takes part
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-4, msg=name)


# Two groups, prompts of different lengths, completions of different lengths (right
# padding, one empty), rows shuffled and one dropped (groups of 3 and 2).
SHUFFLED = ([([1, 2, 3, 4, 5], [1, 4, 6]), ([6, 7], [0, 3, 6])], [4, 0, 3, 2, 5])
# A singleton group next to a shared one.
SINGLETON = ([([9, 8, 7], [5, 2, 5]), ([3, 4, 5, 6, 7, 8], [4])], [0, 3, 1, 2])


@pytest.mark.parametrize("path", ["packed", "two_pass"])
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("case", [SHUFFLED, SINGLETON], ids=["shuffled", "singleton"])
def test_shared_paths_equal_full_forward_and_gradients(path, attention, case):
    _assert_matches_full_forward(_model(attention), _batch(*case), path)


@pytest.mark.parametrize("kv_heads", [1, 4], ids=["gqa", "mha"])
def test_packed_with_and_without_grouped_query_attention(kv_heads):
    _assert_matches_full_forward(_model(kv_heads=kv_heads), _batch(*SHUFFLED), "packed")


@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_packed_under_gradient_checkpointing(attention):
    model = _model(attention, checkpointing=True)
    batch = _batch(*SHUFFLED)
    _assert_matches_full_forward(model, batch, "packed")
    # the automatic choice never takes the KV-cache path, which checkpointing disables
    shape = ModelShape.of(model)
    assert shape.no_cache
    groups = group_rows(batch.input_ids, batch.attention_mask, batch.mask)
    assert "two_pass" not in path_costs(shape, groups, 5, batch.width, grad=True)


def test_automatic_choice_matches_full_forward():
    model, batch = _model(), _batch(*SHUFFLED)
    groups = group_rows(batch.input_ids, batch.attention_mask, batch.mask)
    # tiny model, ~10-token packed rows: one pass with a little masked attention is cheapest
    assert choose_path(ModelShape.of(model), groups, 5, batch.width, grad=True) == "packed"
    _assert_matches_full_forward(model, batch, None)


def test_group_rows_strips_padding_and_keeps_batch_order():
    batch = _batch(*SHUFFLED)  # rows: old 4, 0, 3, 2, 5 (old 0-2: [1..5], 3-5: [6, 7])
    groups = group_rows(batch.input_ids, batch.attention_mask, batch.mask)
    assert [g.prompt for g in groups] == [(6, 7), (1, 2, 3, 4, 5)]
    assert [g.rows for g in groups] == [[0, 2, 4], [1, 3]]
    assert [g.lengths for g in groups] == [[3, 0, 6], [1, 6]]


def test_tree_mask_by_hand():
    # prompt of 2, member 1 feeds 2 tokens, member 2 feeds 1, one pad
    segments = torch.tensor([[0, 0, 1, 1, 2, -1]])
    expected = torch.tensor([[1, 0, 0, 0, 0, 0],
                             [1, 1, 0, 0, 0, 0],
                             [1, 1, 1, 0, 0, 0],
                             [1, 1, 1, 1, 0, 0],
                             [1, 1, 0, 0, 1, 0],
                             [1, 1, 0, 0, 0, 1]], dtype=torch.bool)
    assert torch.equal(tree_attention_mask(segments, torch.float32, additive=False)[0, 0],
                       expected)
    additive = tree_attention_mask(segments, torch.bfloat16, additive=True)[0, 0]
    assert additive.dtype == torch.bfloat16
    assert torch.equal(additive == 0, expected)
    assert (additive[~expected] == torch.finfo(torch.bfloat16).min).all()


def test_no_sharing_without_repeated_prompts():
    model, batch = _model(), _batch(*SHUFFLED)
    one_per_prompt = batch.rows(torch.tensor([0, 1]))  # prompts [6, 7] and [1..5]
    assert shared_prompt_logits(model, one_per_prompt.input_ids, one_per_prompt.attention_mask,
                                one_per_prompt.completion_ids, one_per_prompt.mask) is None


# SmolLM2-135M (config.json of HuggingFaceTB/SmolLM2-135M-Instruct), counted by hand:
# per layer q,o 576*576, k,v 576*192, MLP 3*576*1536, two norms 576 -> 3,540,096; x30
# plus the final norm = 106,203,456; tied embedding 49152*576 = 28,311,552.
SMOLLM2 = dict(vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
               num_attention_heads=9, num_key_value_heads=3, tie_word_embeddings=True)
SMOLLM2_SHAPE = ModelShape(token_params=106_203_456, attention_width=30 * 9 * 64,
                           trainable_params=106_203_456 + 28_311_552, attention="sdpa",
                           no_cache=False)


def test_model_shape_counts_smollm2_by_hand():
    config = LlamaConfig(**SMOLLM2)
    config._attn_implementation = "sdpa"
    with torch.device("meta"):
        model = LlamaForCausalLM(config)
    assert ModelShape.of(model) == SMOLLM2_SHAPE


def _groups(prompt_length, members, length):
    return [Group(tuple(range(prompt_length)), list(range(members)), [length] * members)]


def test_path_choice_follows_the_cost_rule():
    small, long = _groups(95, 8, 32), _groups(95, 16, 1024)
    assert choose_path(SMOLLM2_SHAPE, small, 95, 32, grad=True) == "packed"
    assert choose_path(SMOLLM2_SHAPE, long, 95, 1024, grad=True) == "two_pass"
    checkpointed = ModelShape(**{**SMOLLM2_SHAPE.__dict__, "no_cache": True})
    assert choose_path(checkpointed, small, 95, 32, grad=True) == "packed"
    assert choose_path(checkpointed, long, 95, 1024, grad=True) == "plain"
    # without gradients there is nothing to sum: the KV cache wastes no attention
    assert choose_path(SMOLLM2_SHAPE, small, 95, 32, grad=False) == "two_pass"
    # attention kernels that ignore a 4D mask never pack
    flash = ModelShape(**{**SMOLLM2_SHAPE.__dict__, "attention": "flash_attention_2"})
    assert choose_path(flash, small, 95, 32, grad=True) == "two_pass"


def test_path_costs_by_hand():
    n, a, w = 106_203_456, 30 * 9 * 64, 134_515_008
    costs = path_costs(SMOLLM2_SHAPE, _groups(95, 8, 32), 95, 32, grad=True)
    length = 95 + 8 * 31  # the packed row: prompt + 31 fed tokens per member
    assert costs["packed"] == pytest.approx(3 * (2 * n * length + 4 * a * length ** 2))
    pairs = 95 ** 2 + 8 * 32 * (95 + 32)
    assert costs["two_pass"] == pytest.approx(3 * (2 * n * (95 + 8 * 32) + 4 * a * pairs)
                                              + w * EXTRA_GRADIENT_FLOPS_PER_PARAM)
    assert costs["plain"] == pytest.approx(3 * (2 * n * 8 * 127 + 4 * a * 8 * 127 ** 2))
