"""The update's forward from the sampler's kept activations (one policy epoch).

Until the optimizer steps, the update's forward computes the same function the decode
forward just computed: the same weights, each prompt token once and each completion
token once (the packed GRPO row of rlvr.accel.update.shared_prefix, tree attention). When
the decode kept its GEMM outputs (rlvr.accel.decode.capture), this module runs that packed
forward from them instead of multiplying: every decoder layer is
rlvr.accel.update.replay_layers' (two adds forward; the rest recomputed in a hand-written
backward), the final norm runs as usual on the kept positions, and the lm_head is
`_KeptLinear`, an autograd function whose forward hands back the kept logits and whose
backward is the linear layer's own (dX = dY W, dW = dY^T X, db = sum dY). The forward's
matmuls (a third of the update's FLOPs) are gone, and the log-probs of the sampled
tokens equal the sampler's, as a first epoch's must.

Used only when it is exact: every row's activations come from one decode call of this
model whose parameters have not changed since (torch bumps a tensor's version on every
in-place update, which is how optimizers write), plain `nn.Linear` projections (no
LoRA wrappers, whose base and adapter outputs the decode fused), a Llama-family model
rlvr.accel.decode.fast_llama and the tree attention reproduce, no attention dropout.
Anything else returns None and the caller runs the ordinary forward. Activation
checkpointing needs no exception: the replayed layers hold only their inputs.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from rlvr.algorithms.row_logits import RowLogits
from rlvr.rollout.base import KeptActivations
from rlvr.accel.decode.capture import SLOTS, ActivationCapture
from rlvr.models.families import is_peft, projections, supports_fast_decode
from rlvr.accel.decode.rotary import signed_sin
from rlvr.accel.update.replay_layers import Kept, LayerShape, Packed, replay_layer
from rlvr.accel.update.shared_prefix import (Group, gather_index, group_rows, pack_rows,
                                         packed_length)
from rlvr.accel.update.tree_attention import supports_tree_attention


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
                  activations: Sequence[KeptActivations] | None) -> RowLogits | None:
    """Logits [B, T, V] predicting completion_ids [B, T] (the batch layout of
    rlvr.training.batch; as RowLogits over the kept rows) from kept activations, or None
    when replaying is not exact. completion_mask [B, T]: the real completion tokens,
    every one sampled (the decode kept nothing for an episode's environment tokens:
    rlvr.update_paths' ReplayPath refuses such batches before calling this)."""
    capture = _usable_capture(model, activations)
    if capture is None:
        return None
    groups = group_rows(input_ids, attention_mask, completion_mask)
    if any(not g.prompt for g in groups):
        return None
    rows = [kept.row for kept in activations]  # generation row per batch row
    plan = _plan(capture, groups, rows)
    if plan is None:
        return None
    return _replayed_logits(model, capture, groups, completion_ids, *plan)


def _usable_capture(model: Any, activations: Sequence[KeptActivations] | None
                    ) -> ActivationCapture | None:
    if not activations or any(a is None for a in activations):
        return None
    capture = activations[0].store
    if any(a.store is not capture for a in activations) or not capture.made_by(model):
        return None
    if capture.versions != tuple(p._version for p in model.parameters()):
        return None  # the weights moved since sampling (a later minibatch or epoch)
    return capture if why_not_replay(model) is None else None


def why_not_replay(model: Any) -> str | None:
    """Why this model's update cannot be replayed from kept activations (None: it can)."""
    config = model.config
    if is_peft(model):
        return "LoRA (peft) layers: the decode fused base and adapter outputs into one GEMM"
    if not supports_fast_decode(model):
        return (f"rlvr's decode forward does not reproduce {config.model_type!r} models "
                "(Llama family only: rlvr.models.families)")
    if not supports_tree_attention(model):
        return "the replayed layers use the tree attention, which needs sdpa or eager"
    if getattr(config, "attention_dropout", 0.0):
        return "attention dropout is on"
    if any(type(m) is not torch.nn.Linear for m in projections(model)):
        return "a projection is not a plain nn.Linear"
    return None


def _plan(capture: ActivationCapture, groups: Sequence[Group], rows: list[int]
          ) -> tuple[torch.Tensor, torch.Tensor] | None:
    """Pool rows [G, L] of every packed position (padding: the zero row) and logits rows
    [K] of every kept position, in the order of the packed rows (shared_prefix.pack_rows):
    per group its prompt, then each member's fed tokens (all but its last)."""
    length = max(packed_length(g) for g in groups)
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


def _replayed_logits(model: Any, capture: ActivationCapture, groups: Sequence[Group],
                     completion_ids: torch.Tensor, pool: torch.Tensor,
                     logits_rows: torch.Tensor) -> RowLogits:
    """Logits [B, T, V]: the packed rows (shared_prefix.pack_rows) through the replayed
    layers, the final norm at the kept positions, the kept logits as the lm_head's."""
    inner = model.model
    packed = pack_rows(groups, completion_ids)
    if packed.ids.shape != pool.shape:
        raise RuntimeError(f"replay: packed rows {tuple(packed.ids.shape)} but the kept rows' "
                           f"plan is {tuple(pool.shape)}")
    hidden = inner.embed_tokens(packed.ids)  # [G, L, H] (the module: padding_idx gets no grad)
    cos, sin = inner.rotary_emb(hidden, packed.positions)  # [G, L, D] each
    shared = Packed(cos=cos.reshape(-1, 1, cos.shape[-1]),
                    sin=signed_sin(sin).reshape(-1, 1, sin.shape[-1]),
                    layout=packed.tree_layout(groups), shape=LayerShape.of(model))
    hidden = hidden.reshape(-1, hidden.shape[-1])  # [N, H], N = G*L
    index = pool.reshape(-1)  # [N] pool rows (padding: the zero row)
    for layer, outputs in zip(inner.layers, capture.outputs):
        kept = Kept(*(outputs[slot].index_select(0, index) for slot in SLOTS))
        hidden = replay_layer(layer, hidden, kept, shared)  # [N, H]
    normed = inner.norm(hidden[packed.keep.reshape(-1)])  # [K, H]
    head = model.lm_head
    logits = _KeptLinear.apply(normed, head.weight, head.bias,
                               capture.logits.index_select(0, logits_rows))  # [K, V]
    return RowLogits(logits, gather_index(groups, completion_ids.shape,
                                          completion_ids.device))  # [K, V]
