"""The update's forward from the sampler's kept activations (one policy epoch).

Until the optimizer steps, the update's forward computes the same function the decode
forward just computed: the same weights, each prompt token once and each completion
token once (the packed GRPO row of rlvr.training.shared_prefix, tree attention). When
the decode kept its GEMM outputs (rlvr.rollout.capture), this module runs that packed
forward with every linear layer returning its kept output instead of multiplying:
`_KeptLinear` is an autograd function whose forward hands back the kept tensor and whose
backward is the linear layer's own (dX = dY W, dW = dY^T X, db = sum dY). Norms, rotary
embeddings, attention and activations still run, on the kept values, so autograd holds
everything the backward needs; the forward's matmuls (a third of the update's FLOPs)
are gone. The log-probs of the sampled tokens then equal the sampler's, as a first
epoch's must.

Used only when it is exact: every row's activations come from one decode call of this
model whose parameters have not changed since (torch bumps a tensor's version on every
in-place update, which is how optimizers write), plain `nn.Linear` projections (no
LoRA wrappers, whose base and adapter outputs the decode fused), a Llama-family model
the tree attention runs, no dropout, no activation checkpointing. Anything else returns
None and the caller runs the ordinary forward.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import torch

from rlvr.rollout.capture import ActivationCapture
from rlvr.rollout.fast_llama import projections
from rlvr.training.shared_prefix import (Group, _packed_length, _recomputes_activations,
                                         group_rows, packed_logits)
from rlvr.training.tree_attention import supports_tree_attention


class _KeptLinear(torch.autograd.Function):
    """y = kept (== x @ weight.T + bias as the decode computed it); the linear's gradient."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                kept: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        ctx.has_bias = bias is not None
        return kept.view_as(kept)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors
        grad_x = grad_w = grad_b = None
        if ctx.needs_input_grad[0]:
            grad_x = grad @ weight  # [..., in]
        if ctx.needs_input_grad[1]:
            grad_w = grad.reshape(-1, grad.shape[-1]).T @ x.reshape(-1, x.shape[-1])  # [out, in]
        if ctx.has_bias and ctx.needs_input_grad[2]:
            grad_b = grad.reshape(-1, grad.shape[-1]).sum(0)  # [out]
        return grad_x, grad_w, grad_b, None


def replay_logits(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                  completion_ids: torch.Tensor, completion_mask: torch.Tensor,
                  activations: Sequence[Any] | None) -> torch.Tensor | None:
    """Logits [B, T, V] predicting completion_ids [B, T] (the batch layout of
    rlvr.training.batch) from kept activations, or None when replaying is not exact."""
    capture = _usable_capture(model, activations)
    if capture is None:
        return None
    groups = group_rows(input_ids, attention_mask, completion_mask)
    if any(not g.prompt for g in groups):
        return None
    rows = [activations[r][1] for r in range(len(activations))]  # generation row per batch row
    plan = _plan(capture, groups, rows)
    if plan is None:
        return None
    with _kept_linears(model, capture, *plan):
        return packed_logits(model, groups, completion_ids, tree=True)


def _usable_capture(model: Any, activations: Sequence[Any] | None) -> ActivationCapture | None:
    if not activations or any(a is None for a in activations):
        return None
    capture = activations[0][0]
    if any(a[0] is not capture for a in activations) or capture.owner != id(model):
        return None
    if hasattr(model, "get_base_model"):
        return None  # peft: the decode fused base and adapter outputs into one GEMM
    if capture.versions != tuple(p._version for p in model.parameters()):
        return None  # the weights moved since sampling (a later minibatch or epoch)
    if (not supports_tree_attention(model) or _recomputes_activations(model)
            or getattr(model.config, "attention_dropout", 0.0)):
        return None
    if any(type(m) is not torch.nn.Linear for m in projections(model)):
        return None
    return capture


def _plan(capture: ActivationCapture, groups: Sequence[Group], rows: list[int]
          ) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Pool rows [G, L] of every packed position (padding: the zero row) and logits rows
    [K] of every kept position, in the order `packed_logits` lays them out: per group its
    prompt, then each member's fed tokens (all but its last)."""
    length = max(_packed_length(g) for g in groups)
    pool = torch.full((len(groups), length), capture.capacity, dtype=torch.long)  # [G, L]
    logits = []
    for g, group in enumerate(groups):
        first = rows[group.rows[0]]
        if capture.prompt_lengths[capture.prompt_logits_row(first)] != len(group.prompt):
            return None
        prompt = capture.prompt_rows(first)  # [p]
        pool[g, :len(prompt)] = prompt
        logits.append(torch.tensor([capture.prompt_logits_row(first)]))
        start = len(prompt)
        for row, length_ in zip(group.rows, group.lengths):
            fed = max(length_ - 1, 0)
            token_pool = capture.token_pool[rows[row], :fed]  # [fed]
            if bool((token_pool == capture.capacity).any()):
                return None  # a token the decode never fed (should not happen)
            pool[g, start:start + fed] = token_pool
            logits.append(capture.token_logits[rows[row], :fed])
            start += fed
    return pool, torch.cat(logits)


@contextmanager
def _kept_linears(model: Any, capture: ActivationCapture, pool: torch.Tensor,
                  logits_rows: torch.Tensor) -> Iterator[None]:
    """Within: each projection of `model` returns its kept output for the packed layout
    (checked against the input's shape), the lm_head the kept logits."""
    index = pool.reshape(-1)  # [G*L]
    groups, length = pool.shape
    patched = [(model.lm_head, capture.logits.index_select(0, logits_rows))]  # [K, V]
    for layer, kept in zip(model.model.layers, capture.outputs):
        def take(slot: str) -> torch.Tensor:
            return kept[slot].index_select(0, index).view(groups, length, -1)  # [G, L, w]
        attention, mlp = layer.self_attn, layer.mlp
        q, k = attention.q_proj.out_features, attention.k_proj.out_features
        gate = mlp.gate_proj.out_features
        qkv, gate_up = take("qkv"), take("gate_up")
        # Contiguous pieces: the attention views q/k/v as heads.
        patched += [(attention.q_proj, qkv[..., :q].contiguous()),
                    (attention.k_proj, qkv[..., q:q + k].contiguous()),
                    (attention.v_proj, qkv[..., q + k:].contiguous()),
                    (attention.o_proj, take("o")),
                    (mlp.gate_proj, gate_up[..., :gate].contiguous()),
                    (mlp.up_proj, gate_up[..., gate:].contiguous()),
                    (mlp.down_proj, take("down"))]
    calls = {id(module): 0 for module, _ in patched}
    try:
        for module, output in patched:
            module.forward = _kept_forward(module, output, calls)
        yield
    finally:
        for module, _ in patched:
            vars(module).pop("forward", None)
    if any(count != 1 for count in calls.values()):
        raise RuntimeError("replay: a projection ran other than once in the packed forward "
                           f"({sorted(set(calls.values()))} calls); the model's forward "
                           "does not match the decode layout")


def _kept_forward(module: torch.nn.Linear, output: torch.Tensor, calls: dict[int, int]) -> Any:
    def forward(x: torch.Tensor) -> torch.Tensor:
        calls[id(module)] += 1
        if x.shape[:-1] != output.shape[:-1]:
            raise RuntimeError(f"replay: {type(module).__name__} got input {tuple(x.shape)}, "
                               f"kept output is {tuple(output.shape)}")
        return _KeptLinear.apply(x, module.weight, module.bias, output)
    return forward
