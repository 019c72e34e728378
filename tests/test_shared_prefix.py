"""Completion logits with each shared prompt run once equal the plain full-batch forward,
values and gradients, for rows in any order and prompts of different lengths."""

from __future__ import annotations

import torch
from transformers import LlamaConfig, LlamaForCausalLM

from rlvr.rollout.base import Completion
from rlvr.training.batch import pack
from rlvr.training.shared_prefix import shared_prompt_logits


def _model():
    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(vocab_size=50, hidden_size=32, intermediate_size=64,
                                        num_hidden_layers=2, num_attention_heads=4,
                                        num_key_value_heads=2))


def _batch():
    generator = torch.Generator().manual_seed(1)
    rows = []
    for prompt in ([1, 2, 3, 4, 5], [6, 7]):
        for length in (1, 4, 6):
            ids = torch.randint(0, 50, (length,), generator=generator).tolist()
            rows.append(Completion(prompt_ids=prompt, token_ids=ids, logprobs=[0.0] * length,
                                   text="", finish_reason="eos"))
    return pack(rows, 0, torch.device("cpu")).rows(torch.tensor([4, 0, 2, 5, 1]))


def test_shared_prompt_logits_equal_full_forward_and_gradients():
    model, batch = _model(), _batch()
    full = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                 position_ids=batch.position_ids, logits_to_keep=batch.width + 1).logits[:, :-1]
    shared = shared_prompt_logits(model, batch.input_ids, batch.attention_mask,
                                  batch.completion_ids, batch.mask)
    real = batch.mask.bool()  # [B, T]
    torch.testing.assert_close(shared[real], full[real], rtol=1e-5, atol=1e-5)
    params = list(model.parameters())
    grads_full = torch.autograd.grad(full.log_softmax(-1)[real].sum(), params)
    grads_shared = torch.autograd.grad(shared.log_softmax(-1)[real].sum(), params)
    for a, b in zip(grads_full, grads_shared):
        torch.testing.assert_close(b, a, rtol=1e-4, atol=1e-4)


def test_no_sharing_without_repeated_prompts():
    model, batch = _model(), _batch()
    one_per_prompt = batch.rows(torch.tensor([0, 1]))  # prompts [6, 7] and [1..5]
    assert shared_prompt_logits(model, one_per_prompt.input_ids, one_per_prompt.attention_mask,
                                one_per_prompt.completion_ids, one_per_prompt.mask) is None
