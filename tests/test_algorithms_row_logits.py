"""token_logprobs_and_entropy over row-indexed logits equals log_softmax / entropy of the
dense [B, T, V] logits, computed naively in float64: values and gradients."""

from __future__ import annotations

import pytest
import torch

from rlvr.algorithms.row_logits import RowLogits, token_logprobs_and_entropy


def _naive(dense: torch.Tensor, ids: torch.Tensor, temperature: float):
    log_p = torch.log_softmax(dense / temperature, -1)  # [B, T, V]
    p = log_p.exp()
    entropy = -(p * torch.where(p > 0, log_p, torch.zeros_like(log_p))).sum(-1)
    return log_p.gather(-1, ids[..., None])[..., 0], entropy


def _case(banned: bool):
    torch.manual_seed(3)
    table = torch.randn(7, 11, dtype=torch.float64) * 3  # [R, V]
    if banned:
        table[2, 4] = table[5, 0] = float("-inf")  # tokens a sampler may have banned
    # Row 0 is shared by three positions (a group's first token), row 6 by none.
    index = torch.tensor([[0, 1, 2, 3], [0, 4, 5, 5], [0, 2, 1, 3]])  # [B, T]
    ids = torch.tensor([[1, 3, 5, 7], [9, 10, 0 if not banned else 1, 2], [4, 6, 8, 0]])
    return table, index, ids


@pytest.mark.parametrize("temperature", [1.0, 0.7])
@pytest.mark.parametrize("banned", [False, True])
@pytest.mark.parametrize("chunk_rows", [1, 3, None])
def test_values_and_gradients_match_dense(temperature, banned, chunk_rows):
    table, index, ids = _case(banned)
    leaf = table.clone().requires_grad_()
    logprobs, entropy = token_logprobs_and_entropy(RowLogits(leaf, index), ids, temperature,
                                                   chunk_rows=chunk_rows)
    dense = table.clone().requires_grad_()
    expected_lp, expected_h = _naive(dense[index], ids, temperature)
    torch.testing.assert_close(logprobs, expected_lp, rtol=0, atol=1e-12)
    torch.testing.assert_close(entropy, expected_h, rtol=0, atol=1e-12)
    g_lp, g_h = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    (logprobs * g_lp + entropy * g_h).sum().backward()
    (expected_lp * g_lp + expected_h * g_h).sum().backward()
    assert torch.isfinite(leaf.grad).all()
    torch.testing.assert_close(leaf.grad, dense.grad, rtol=0, atol=1e-12)


def test_logprobs_only_gradient():
    """The usual case (entropy as a metric): only the log-probs carry a gradient."""
    table, index, ids = _case(banned=True)
    leaf = table.clone().requires_grad_()
    logprobs, _ = token_logprobs_and_entropy(RowLogits(leaf, index), ids)
    dense = table.clone().requires_grad_()
    expected, _ = _naive(dense[index], ids, 1.0)
    logprobs.sum().backward()
    expected.sum().backward()
    torch.testing.assert_close(leaf.grad, dense.grad, rtol=0, atol=1e-12)


def test_float32_table_gives_float32():
    table, index, ids = _case(banned=False)
    logprobs, entropy = token_logprobs_and_entropy(RowLogits(table.float(), index), ids)
    assert logprobs.dtype == entropy.dtype == torch.float32
    expected_lp, expected_h = _naive(table[index], ids, 1.0)
    torch.testing.assert_close(logprobs.double(), expected_lp, rtol=0, atol=1e-5)
    torch.testing.assert_close(entropy.double(), expected_h, rtol=0, atol=1e-5)


def test_of_dense_views_a_sliced_tensor():
    full = torch.randn(2, 5, 6)  # [B, T+1, V], e.g. a causal LM's logits
    rows = RowLogits.of(full[:, :-1])
    assert rows.table.data_ptr() == full.data_ptr()  # no copy
    torch.testing.assert_close(rows.dense(), full[:, :-1], rtol=0, atol=0)


@pytest.mark.parametrize("bad,message", [
    ({"ids": torch.tensor([[11, 0, 0, 0]] * 3)}, "token_ids must lie in"),
    ({"index": torch.tensor([[7, 0, 0, 0]] * 3)}, "index must lie in"),
    ({"ids": torch.zeros(3, 5, dtype=torch.long)}, "token_ids must be"),
])
def test_bad_input_is_named(bad, message):
    table, index, ids = _case(banned=False)
    index, ids = bad.get("index", index), bad.get("ids", ids)
    with pytest.raises(ValueError, match=message):
        token_logprobs_and_entropy(RowLogits(table, index), ids)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
@pytest.mark.parametrize("banned", [False, True])
def test_an_owned_table_takes_its_own_gradient(dtype, temperature, banned):
    """An owned table's gradient is written over it (no second [R, V] tensor), and it is
    the gradient a table left intact gets, bit for bit, with and without the entropy's."""
    table, index, ids = _case(banned)
    g_lp, g_h = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    results = {}
    for owned in (False, True):
        leaf = table.to(dtype).requires_grad_()
        made = leaf * 1.0  # an intermediate, as a model's logits are
        flowing = []
        made.register_hook(lambda grad: flowing.append(grad))
        logprobs, entropy = token_logprobs_and_entropy(RowLogits(made, index, owned), ids,
                                                       temperature, chunk_rows=2)
        (logprobs * g_lp.to(logprobs.dtype) + entropy * g_h.to(entropy.dtype)).sum().backward()
        assert (flowing[0].data_ptr() == made.data_ptr()) == owned
        results[owned] = leaf.grad
    assert torch.equal(results[True], results[False])


def test_an_owned_leaf_is_refused():
    table, index, ids = _case(banned=False)
    leaf = table.clone().requires_grad_()
    for owned_view in (leaf, leaf[:, :]):
        with pytest.raises(ValueError, match="owned"):
            token_logprobs_and_entropy(RowLogits(owned_view, index, owned=True), ids)
    with torch.no_grad():  # no backward will run: nothing to refuse
        token_logprobs_and_entropy(RowLogits(leaf, index, owned=True), ids)
