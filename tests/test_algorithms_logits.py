"""Chunked token log-probs and entropy against the naive full-tensor computation."""

import math

import pytest
import torch

from rlvr.algorithms import token_entropy, token_logprobs

B, T, V = 3, 5, 17
CHUNKS = [1, 4, 7, None, B * T + 3]  # one row, uneven splits, default, all rows at once


def naive_logprobs(logits, ids, temperature):
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)  # [B, T, V]
    return logp.gather(-1, ids[..., None]).squeeze(-1)  # [B, T]


def naive_entropy(logits, temperature):
    logp = torch.log_softmax(logits.float() / temperature, dim=-1)  # [B, T, V]
    return -(logp.exp() * logp).sum(-1)  # [B, T]


def random_inputs(dtype, seed=0):
    torch.manual_seed(seed)
    logits = (torch.randn(B, T, V) * 3).to(dtype)
    ids = torch.randint(0, V, (B, T))
    return logits, ids


def test_logprobs_by_hand():
    # logits ln[1, 2, 3] -> probs [1/6, 2/6, 3/6]; token 2 -> ln 0.5
    logits = torch.tensor([1.0, 2.0, 3.0]).log().view(1, 1, 3)
    assert token_logprobs(logits, torch.tensor([[2]])).item() == pytest.approx(math.log(0.5))
    # temperature 2 on logits [0, 2 ln 2] -> [0, ln 2] -> probs [1/3, 2/3]
    logits = torch.tensor([0.0, 2 * math.log(2)]).view(1, 1, 2)
    out = token_logprobs(logits, torch.tensor([[1]]), temperature=2.0)
    assert out.item() == pytest.approx(math.log(2 / 3))


def test_entropy_by_hand():
    # uniform over 4 -> ln 4; two equal logits and two banned (-inf) -> ln 2
    logits = torch.tensor([[[0.0, 0.0, 0.0, 0.0], [0.0, -math.inf, 0.0, -math.inf]]],
                          requires_grad=True)
    out = token_entropy(logits)
    torch.testing.assert_close(out, torch.tensor([[math.log(4), math.log(2)]]))
    out.sum().backward()
    # at a maximum of the entropy the gradient is 0 (and finite at the banned tokens)
    torch.testing.assert_close(logits.grad, torch.zeros(1, 2, 4))


@pytest.mark.parametrize("chunk_rows", CHUNKS)
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_match_naive_float32(chunk_rows, temperature):
    logits, ids = random_inputs(torch.float32)
    logits.requires_grad_()
    ours = token_logprobs(logits, ids, temperature, chunk_rows=chunk_rows)
    assert ours.dtype == torch.float32
    weights = torch.randn(B, T)
    (weights * ours).sum().backward()
    ours_grad, logits.grad = logits.grad, None
    naive = naive_logprobs(logits, ids, temperature)
    (weights * naive).sum().backward()
    torch.testing.assert_close(ours, naive, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours_grad, logits.grad, atol=1e-6, rtol=0)


@pytest.mark.parametrize("chunk_rows", CHUNKS)
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_entropy_matches_naive_float32(chunk_rows, temperature):
    logits, _ = random_inputs(torch.float32, seed=1)
    logits.requires_grad_()
    ours = token_entropy(logits, temperature, chunk_rows=chunk_rows)
    weights = torch.randn(B, T)
    (weights * ours).sum().backward()
    ours_grad, logits.grad = logits.grad, None
    naive = naive_entropy(logits, temperature)
    (weights * naive).sum().backward()
    torch.testing.assert_close(ours, naive, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours_grad, logits.grad, atol=1e-5, rtol=0)


@pytest.mark.parametrize("chunk_rows", [1, 7, None])
def test_bf16_logits(chunk_rows):
    logits, ids = random_inputs(torch.bfloat16, seed=2)
    logits.requires_grad_()
    logp = token_logprobs(logits, ids, 0.9, chunk_rows=chunk_rows)
    ent = token_entropy(logits, 0.9, chunk_rows=chunk_rows)
    assert logp.dtype == ent.dtype == torch.float32  # computed in float32
    # the same bf16 values upcast and reduced naively in float32: equal to fp32 rounding
    torch.testing.assert_close(logp, naive_logprobs(logits, ids, 0.9), atol=1e-5, rtol=0)
    torch.testing.assert_close(ent, naive_entropy(logits, 0.9), atol=1e-5, rtol=0)
    # a naive reduction done in bf16 itself is close only to bf16 precision
    bf16_naive = torch.log_softmax(logits / 0.9, -1).gather(-1, ids[..., None]).squeeze(-1)
    torch.testing.assert_close(logp, bf16_naive.float(), atol=0.1, rtol=0.02)
    # gradient arrives in the logits' dtype, equal to the fp32 gradient up to bf16 rounding
    logp.sum().backward()
    assert logits.grad.dtype == torch.bfloat16
    reference = logits.detach().float().requires_grad_()
    naive_logprobs(reference, ids, 0.9).sum().backward()
    torch.testing.assert_close(logits.grad.float(), reference.grad, atol=1e-2, rtol=1e-2)


@pytest.mark.parametrize("chunk_rows", [2, 100])
def test_sliced_non_contiguous_logits(chunk_rows):
    # a causal LM's logits[:, :-1] cannot be flattened without a copy: blocks per row
    torch.manual_seed(4)
    full = torch.randn(B, T + 1, V, requires_grad=True)
    logits = full[:, :-1]  # [B, T, V], non-contiguous
    ids = torch.randint(0, V, (B, T))
    weights = torch.randn(B, T)
    ours = token_logprobs(logits, ids, 0.8, chunk_rows=chunk_rows)
    ent = token_entropy(logits, 0.8, chunk_rows=chunk_rows)
    ((weights * ours).sum() + (weights * ent).sum()).backward()
    ours_grad, full.grad = full.grad, None
    naive = naive_logprobs(logits, ids, 0.8)
    naive_ent = naive_entropy(logits, 0.8)
    ((weights * naive).sum() + (weights * naive_ent).sum()).backward()
    torch.testing.assert_close(ours, naive, atol=1e-5, rtol=0)
    torch.testing.assert_close(ent, naive_ent, atol=1e-5, rtol=0)
    torch.testing.assert_close(ours_grad, full.grad, atol=1e-5, rtol=0)


def test_gradcheck_double():
    torch.manual_seed(3)
    logits = torch.randn(2, 3, 5, dtype=torch.float64, requires_grad=True)
    ids = torch.randint(0, 5, (2, 3))
    assert torch.autograd.gradcheck(lambda x: token_logprobs(x, ids, 0.7, chunk_rows=4),
                                    (logits,))
    assert torch.autograd.gradcheck(lambda x: token_entropy(x, 0.7, chunk_rows=4), (logits,))


def test_no_float32_copy_of_the_logits_is_kept_for_backward():
    # The point of the chunking: with bf16 logits, autograd must save nothing of size
    # B*T*V except the logits themselves (a naive .float().log_softmax() saves two fp32
    # copies). Record every tensor autograd saves.
    logits, ids = random_inputs(torch.bfloat16)
    logits.requires_grad_()
    saved = []

    def pack(tensor):
        saved.append((tensor.numel(), tensor.dtype, tensor.data_ptr()))
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        (token_logprobs(logits, ids, chunk_rows=2).sum()
         + token_entropy(logits, chunk_rows=2).sum()).backward()
    big = [s for s in saved if s[0] >= B * T * V]
    assert big and all(s == (B * T * V, torch.bfloat16, logits.data_ptr()) for s in big)

    saved.clear()  # the check is able to fail: the naive version saves fp32 copies
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        naive_logprobs(logits, ids, 1.0).sum().backward()
    assert any(s[0] == B * T * V and s[1] == torch.float32 for s in saved)


def test_bad_inputs():
    logits = torch.zeros(1, 2, 3)
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        token_logprobs(logits, torch.tensor([[0, 3]]))
    with pytest.raises(ValueError, match="token_ids"):
        token_logprobs(logits, torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="temperature"):
        token_entropy(logits, temperature=0.0)
    with pytest.raises(ValueError, match=r"\[B, T, V\]"):
        token_entropy(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="chunk_rows"):
        token_entropy(logits, chunk_rows=0)
