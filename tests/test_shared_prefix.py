"""Completion logits with each shared prompt run once (packed row with the tree
attention or the 4D tree mask, or prompt + KV cache) equal the plain full-batch forward,
values and gradients wrt every parameter; and the path choice follows the FLOP estimate."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

from rlvr.rollout.base import Completion
from rlvr.training.batch import pack
from rlvr.accel.update.shared_prefix import (EXTRA_GRADIENT_FLOPS_PER_PARAM, Group, ModelShape,
                                         choose_path, group_rows, path_costs,
                                         shared_prompt_logits, tree_attention_mask)
from rlvr.accel.update.tree_attention import (TREE_ATTENTION, build_tree_layout, tree_attention,
                                          tree_attention_enabled)

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
                                  batch.completion_ids, batch.mask, path=path).dense()
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


@pytest.mark.parametrize("path", ["tree", "packed", "two_pass"])
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
@pytest.mark.parametrize("case", [SHUFFLED, SINGLETON], ids=["shuffled", "singleton"])
def test_shared_paths_equal_full_forward_and_gradients(path, attention, case):
    _assert_matches_full_forward(_model(attention), _batch(*case), path)


@pytest.mark.parametrize("path", ["tree", "packed"])
@pytest.mark.parametrize("kv_heads", [1, 4], ids=["gqa", "mha"])
def test_packed_with_and_without_grouped_query_attention(kv_heads, path):
    _assert_matches_full_forward(_model(kv_heads=kv_heads), _batch(*SHUFFLED), path)


@pytest.mark.parametrize("path", ["tree", "packed"])
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_packed_under_gradient_checkpointing(attention, path):
    model = _model(attention, checkpointing=True)
    batch = _batch(*SHUFFLED)
    _assert_matches_full_forward(model, batch, path)
    # the automatic choice never takes the KV-cache path, which checkpointing disables
    shape = ModelShape.of(model)
    assert shape.no_cache
    groups = group_rows(batch.input_ids, batch.attention_mask, batch.mask)
    assert "two_pass" not in path_costs(shape, groups, 5, batch.width, grad=True)


def test_automatic_choice_matches_full_forward():
    model, batch = _model(), _batch(*SINGLETON)
    groups = group_rows(batch.input_ids, batch.attention_mask, batch.mask)
    # one pass over the packed rows (length 12), only the allowed pairs: 2 * 6^2 prompt +
    # 4 members x 4 x (6 + 4) = 232 against the 4D mask's 2 * 12^2 = 288
    assert choose_path(ModelShape.of(model), groups, 6, batch.width, grad=True) == "tree"
    _assert_matches_full_forward(model, batch, None)
    # without gradients (old and reference log-probs) too
    with torch.no_grad():
        full = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                     position_ids=batch.position_ids, logits_to_keep=batch.width + 1).logits
        shared = shared_prompt_logits(model, batch.input_ids, batch.attention_mask,
                                      batch.completion_ids, batch.mask).dense()
    real = batch.mask.bool()  # [B, T]
    torch.testing.assert_close(shared[real], full[:, :-1][real], rtol=1e-4, atol=1e-4)


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
                           no_cache=False, tree=True)
MASK_ONLY = dataclasses.replace(SMOLLM2_SHAPE, tree=False)  # a model the tree cannot run


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
    # the tree does two-pass's useful pairs (less the last token) without its extra
    # gradients or repeated KV cache: it wins everywhere it can run
    checkpointed = dataclasses.replace(SMOLLM2_SHAPE, no_cache=True)
    for shape, groups, width, grad in [(SMOLLM2_SHAPE, small, 32, True),
                                       (SMOLLM2_SHAPE, long, 1024, True),
                                       (SMOLLM2_SHAPE, small, 32, False),
                                       (checkpointed, long, 1024, True)]:
        assert choose_path(shape, groups, 95, width, grad) == "tree"
    # without it, the 4D mask's quadratic attention loses to two-pass on long completions
    assert choose_path(MASK_ONLY, small, 95, 32, grad=True) == "packed"
    assert choose_path(MASK_ONLY, long, 95, 1024, grad=True) == "two_pass"
    checkpointed = dataclasses.replace(MASK_ONLY, no_cache=True)
    assert choose_path(checkpointed, small, 95, 32, grad=True) == "packed"
    assert choose_path(checkpointed, long, 95, 1024, grad=True) == "plain"
    # without gradients there is nothing to sum: the KV cache wastes no attention
    assert choose_path(MASK_ONLY, small, 95, 32, grad=False) == "two_pass"
    # attention kernels that ignore a 4D mask never pack
    flash = dataclasses.replace(MASK_ONLY, attention="flash_attention_2")
    assert choose_path(flash, small, 95, 32, grad=True) == "two_pass"


def test_path_costs_by_hand():
    n, a, w = 106_203_456, 30 * 9 * 64, 134_515_008
    costs = path_costs(SMOLLM2_SHAPE, _groups(95, 8, 32), 95, 32, grad=True)
    length = 95 + 8 * 31  # the packed row: prompt + 31 fed tokens per member
    assert costs["packed"] == pytest.approx(3 * (2 * n * length + 4 * a * length ** 2))
    tree_pairs = 95 ** 2 + 8 * 31 * (95 + 31)  # prompt block + each member vs [prompt | own]
    assert costs["tree"] == pytest.approx(3 * (2 * n * length + 4 * a * tree_pairs))
    pairs = 95 ** 2 + 8 * 32 * (95 + 32)
    assert costs["two_pass"] == pytest.approx(3 * (2 * n * (95 + 8 * 32) + 4 * a * pairs)
                                              + w * EXTRA_GRADIENT_FLOPS_PER_PARAM)
    assert costs["plain"] == pytest.approx(3 * (2 * n * 8 * 127 + 4 * a * 8 * 127 ** 2))


# ---- the tree attention function itself ---------------------------------------------------

def _segments(prompts, fed, length):
    """[G, L] segment ids (0 prompt, members 1.., -1 pad) of packed rows."""
    segments = torch.full((len(prompts), length), -1)
    for g, (p, lengths) in enumerate(zip(prompts, fed)):
        segments[g, :p] = 0
        start = p
        for member, f in enumerate(lengths, start=1):
            segments[g, start:start + f] = member
            start += f
    return segments


# two rows: prompt 3 with members feeding 2, 0 (empty) and 4 tokens; prompt 6 with 1
# and 3; two pad positions at the end of the longer row, more on the shorter. And rows
# whose members feed no token at all (completions of one token: only the prompt runs).
LAYOUTS = [([3, 6], [[2, 0, 4], [1, 3]], 12), ([4, 2], [[0, 0], [0]], 5)]


@pytest.mark.parametrize("prompts, fed, length", LAYOUTS, ids=["ragged", "no-member-tokens"])
@pytest.mark.parametrize("kv_heads", [2, 4], ids=["gqa", "mha"])
def test_tree_attention_equals_sdpa_with_the_tree_mask(kv_heads, prompts, fed, length):
    layout = build_tree_layout(prompts, fed, length, torch.device("cpu"))
    generator = torch.Generator().manual_seed(3)
    q = torch.randn(2, 4, length, 8, generator=generator, requires_grad=True)  # [G, H, L, D]
    k = torch.randn(2, kv_heads, length, 8, generator=generator, requires_grad=True)
    v = torch.randn(2, kv_heads, length, 8, generator=generator, requires_grad=True)
    out, _ = tree_attention(None, q, k, v, None, scaling=0.3, tree_layout=layout)  # [G, L, H, D]
    segments = _segments(prompts, fed, length)  # [G, L]
    mask = tree_attention_mask(segments, torch.float32, additive=False)  # [G, 1, L, L]
    expected = torch.nn.functional.scaled_dot_product_attention(
        q, k, v, attn_mask=mask, scale=0.3, enable_gqa=True).transpose(1, 2)  # [G, L, H, D]
    real = segments != -1  # [G, L]
    assert out.isfinite().all()  # pads too
    torch.testing.assert_close(out[real], expected[real], rtol=1e-5, atol=1e-5)
    weights = torch.randn(expected[real].shape, generator=generator)
    grads = torch.autograd.grad((out[real] * weights).sum(), (q, k, v))
    expected_grads = torch.autograd.grad((expected[real] * weights).sum(), (q, k, v))
    for name, got, want in zip("qkv", grads, expected_grads):
        assert want.abs().sum() > 0
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5, msg=name)


def test_tree_layout_by_hand():
    # prompt 2, members feeding 2 and 1 tokens, one pad: positions 0-1 | 2-3 | 4 | 5
    layout = build_tree_layout([2], [[2, 1]], 6, torch.device("cpu"))
    assert (layout.prompt_width, layout.width, layout.members) == (2, 2, 2)
    assert layout.query_index.tolist() == [2, 3, 4, 4]  # member 2's pad repeats its token
    assert layout.key_index.tolist() == [0, 1, 2, 3, 0, 1, 4, 4]
    # [prompt 0, 1 | own 0, 1]: own causal; member 2's pad query (t = 1) sees its real
    # token and itself (a copy of it), never an empty row
    assert layout.member_mask[:, 0].int().tolist() == [[[1, 1, 1, 0], [1, 1, 1, 1]],
                                                       [[1, 1, 1, 0], [1, 1, 1, 1]]]
    # outputs: prompt rows 0-1, member rows 2-3 and 4 (5 is member 2's pad); pad -> row 0
    assert layout.source.tolist() == [0, 1, 2, 3, 4, 0]


def test_attention_implementation_restored_after_the_tree_forward():
    for model in (_model("eager"), _model("sdpa", checkpointing=True)):
        before = model.config._attn_implementation
        functions = {name: vars(m).get("_gradient_checkpointing_func")
                     for name, m in model.named_modules()}
        batch = _batch(*SHUFFLED)
        logits = shared_prompt_logits(model, batch.input_ids, batch.attention_mask,
                                      batch.completion_ids, batch.mask, path="tree")
        assert model.config._attn_implementation == before
        assert all(layer.self_attn.config._attn_implementation == before
                   for layer in model.model.layers)
        logits.table.sum().backward()  # checkpointing recomputes under the tree, then restores
        assert model.config._attn_implementation == before
        assert functions == {name: vars(m).get("_gradient_checkpointing_func")
                             for name, m in model.named_modules()}
    with pytest.raises(ZeroDivisionError):  # restored on error too
        with tree_attention_enabled(model):
            assert model.config._attn_implementation == TREE_ATTENTION
            1 / 0
    assert model.config._attn_implementation == "sdpa"


def test_tree_path_with_a_qwen2_model():
    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=VOCAB, hidden_size=32, intermediate_size=64,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    config._attn_implementation = "sdpa"
    model = Qwen2ForCausalLM(config)
    assert ModelShape.of(model).tree
    _assert_matches_full_forward(model, _batch(*SINGLETON), "tree")
