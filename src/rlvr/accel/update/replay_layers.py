"""Decoder layers of the replayed update forward, with a hand-written backward.

With every GEMM output of the decode kept (rlvr.accel.decode.capture), a Llama-family
decoder layer's output needs no arithmetic beyond two adds:

    out = (h + o) + down        o, down: the kept outputs of o_proj and down_proj

(the decode added them to the residual stream in that order, so the values are its
own). Everything else a layer computes (the RMSNorms, the rotary embedding, the
attention, SiLU(gate) * up) only feeds the kept GEMMs, so the forward skips it and
`_ReplayedLayer.backward` recomputes it from h and the kept q|k|v and gate|up, one layer
at a time, and differentiates the layer by hand. Through autograd the same layer ran
~60 torch ops forward and ~90 backward on [~330, 576..1536] tensors (SmolLM2-135M,
one GSM8K group), ~13 ms per layer beside its GEMMs; by hand it is ~25 ops and one
attention forward + backward (torch's, through autograd), and it holds only h per
layer between the forward and the backward.

The math (transformers' LlamaDecoderLayer; x_hat = x * rsqrt(mean(x^2) + eps)):

    a1 = w_in * x_hat(h)              q|k|v = a1 Wqkv^T + b    (kept)
    q, k = rotate(q), rotate(k)       att = tree_attention(q, k, v)
    m = h + att Wo^T + bo             (o kept)
    a2 = w_post * x_hat(m)            gate|up = a2 Wgu^T + b   (kept)
    out = m + (silu(gate) * up) Wd^T + bd                      (down kept)

and its backward, with RMSNorm's d x = r * (d x_hat - x_hat * mean(d x_hat * x_hat))
(r the inverse RMS) and rotate's transpose (rlvr.accel.decode.rotary.rotate_backward).
Projection weight gradients come from one GEMM per fused output (q|k|v, gate|up),
split into contiguous row blocks, one per weight.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from rlvr.accel.decode.rotary import rotate, rotate_backward
from rlvr.accel.update.tree_attention import TreeLayout, tree_attention

WEIGHTS = (("self_attn", "q_proj"), ("self_attn", "k_proj"), ("self_attn", "v_proj"),
           ("self_attn", "o_proj"), ("mlp", "gate_proj"), ("mlp", "up_proj"),
           ("mlp", "down_proj"))


@dataclass(frozen=True)
class LayerShape:
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    eps: float
    scale: float  # attention scaling

    @classmethod
    def of(cls, model: Any) -> "LayerShape":
        config, attention = model.config, model.model.layers[0].self_attn
        heads = config.num_attention_heads
        return cls(heads=heads, kv_heads=getattr(config, "num_key_value_heads", None) or heads,
                   head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
                   intermediate=config.intermediate_size,
                   eps=float(model.model.layers[0].input_layernorm.variance_epsilon),
                   scale=float(attention.scaling))


@dataclass(frozen=True)
class Packed:
    """What every layer of one replay shares: the packed positions' rotary tables and
    the tree layout (rlvr.accel.update.tree_attention) of G rows of length L (N = G * L)."""
    cos: torch.Tensor     # [N, 1, D]
    sin: torch.Tensor     # [N, 1, D] signed (rlvr.accel.decode.rotary.signed_sin)
    layout: TreeLayout
    shape: LayerShape


@dataclass(frozen=True)
class Kept:
    """One layer's kept GEMM outputs at the packed positions."""
    qkv: torch.Tensor      # [N, (h + 2kv) D]
    o: torch.Tensor        # [N, H]
    gate_up: torch.Tensor  # [N, 2I]
    down: torch.Tensor     # [N, H]


def replay_layer(layer: Any, hidden: torch.Tensor, kept: Kept, packed: Packed) -> torch.Tensor:
    """The layer's output [N, H] from its input hidden [N, H]; differentiable with
    respect to hidden and every parameter of the layer."""
    linears = [getattr(getattr(layer, block), name) for block, name in WEIGHTS]
    return _ReplayedLayer.apply(hidden, kept, packed, layer.input_layernorm.weight,
                                layer.post_attention_layernorm.weight,
                                *(m.weight for m in linears), *(m.bias for m in linears))


class _ReplayedLayer(torch.autograd.Function):
    """Inputs: hidden, kept, packed, w_in, w_post, 7 weights (q k v o gate up down),
    7 biases (None where absent)."""

    @staticmethod
    def forward(ctx: Any, hidden: torch.Tensor, kept: Kept, packed: Packed,
                *params: torch.Tensor | None) -> torch.Tensor:
        ctx.kept, ctx.packed = kept, packed
        ctx.save_for_backward(hidden, *params)
        return hidden + kept.o + kept.down  # [N, H], the decode's own sum order

    @staticmethod
    @once_differentiable
    def backward(ctx: Any, grad_out: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        hidden, w_in, w_post, *rest = ctx.saved_tensors
        weights = rest[:7]  # rest[7:], the biases: their gradients need only the d outputs
        kept, packed = ctx.kept, ctx.packed
        wants = ctx.needs_input_grad[3:]  # w_in, w_post, 7 weights, 7 biases
        grads: list[torch.Tensor | None] = [None] * len(wants)
        mid = hidden + kept.o  # [N, H]
        grad_mid, grads[1] = _mlp_backward(grad_out, mid, w_post, weights[4:], kept.gate_up,
                                           packed.shape, grads, wants)
        grad_out = grad_mid.add_(grad_out)  # the residual's path: d mid = d out + MLP's
        grad_hidden, grads[0] = _attention_backward(grad_out, hidden, w_in, weights[:4],
                                                    kept.qkv, packed, grads, wants)
        grad_hidden.add_(grad_out)
        return (grad_hidden, None, None, *grads)


def _mlp_backward(grad_out: torch.Tensor, mid: torch.Tensor, w_post: torch.Tensor,
                  weights: list[torch.Tensor], gate_up: torch.Tensor, shape: LayerShape,
                  grads: list[Any], wants: tuple[bool, ...]
                  ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """d mid through the MLP branch (before the residual's d out is added), and d w_post.
    Fills grads[6..8] (gate, up, down weights) and grads[13..15] (their biases)."""
    w_gate, w_up, w_down = weights
    inverse, normed = _normalize(mid, shape.eps)  # [N, 1], [N, H]
    inputs = normed * w_post  # [N, H]: gate|up's input
    size = shape.intermediate
    gate, up = gate_up[:, :size], gate_up[:, size:]  # [N, I] each
    silu = F.silu(gate)  # [N, I]
    if wants[8]:
        grads[8] = grad_out.T @ (silu * up)  # [H, I]
    if wants[15]:
        grads[15] = grad_out.sum(0)
    grad_act = grad_out @ w_down  # [N, I]
    grad_gate_up = torch.empty_like(gate_up)  # [N, 2I]
    torch.mul(grad_act, silu, out=grad_gate_up[:, size:])
    grad_gate_up[:, :size] = torch.ops.aten.silu_backward(grad_act.mul_(up), gate)
    _weight_grads(grad_gate_up, inputs, (6, 7), (13, 14), [size, size], grads, wants)
    grad_inputs = grad_gate_up[:, :size] @ w_gate  # [N, H]
    grad_inputs.addmm_(grad_gate_up[:, size:], w_up)
    return _norm_backward(grad_inputs, normed, inverse, w_post, wants[1])


def _attention_backward(grad_mid: torch.Tensor, hidden: torch.Tensor, w_in: torch.Tensor,
                        weights: list[torch.Tensor], qkv: torch.Tensor, packed: Packed,
                        grads: list[Any], wants: tuple[bool, ...]
                        ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """d hidden through the attention branch (before the residual's), and d w_in.
    Fills grads[2..5] (q, k, v, o weights) and grads[9..12] (their biases)."""
    w_q, w_k, w_v, w_o = weights
    s = packed.shape
    h, kv, d = s.heads, s.kv_heads, s.head_dim
    rows = hidden.shape[0]
    heads = qkv.view(rows, h + 2 * kv, d)  # [N, h+2kv, D]
    with torch.enable_grad():  # the attention alone goes through autograd
        rotated = rotate(heads[:, :h + kv], packed.cos, packed.sin).requires_grad_()
        values = heads[:, h + kv:].detach().requires_grad_()  # [N, kv, D]
        attended = _tree_attention(rotated, values, packed)  # [N, h*D]
    if wants[5]:
        grads[5] = grad_mid.T @ attended.detach()  # [H, h*D]
    if wants[12]:
        grads[12] = grad_mid.sum(0)
    grad_rotated, grad_values = torch.autograd.grad(attended, (rotated, values),
                                                    grad_mid @ w_o)
    grad_qkv = torch.empty_like(heads)  # [N, h+2kv, D]
    grad_qkv[:, :h + kv] = rotate_backward(grad_rotated, packed.cos, packed.sin)
    grad_qkv[:, h + kv:] = grad_values
    grad_qkv = grad_qkv.view(rows, -1)  # [N, (h+2kv) D]
    inverse, normed = _normalize(hidden, s.eps)
    _weight_grads(grad_qkv, normed * w_in, (2, 3, 4), (9, 10, 11), [h * d, kv * d, kv * d],
                  grads, wants)
    grad_inputs = grad_qkv[:, :h * d] @ w_q  # [N, H]
    grad_inputs.addmm_(grad_qkv[:, h * d:(h + kv) * d], w_k)
    grad_inputs.addmm_(grad_qkv[:, (h + kv) * d:], w_v)
    return _norm_backward(grad_inputs, normed, inverse, w_in, wants[0])


def _tree_attention(rotated: torch.Tensor, values: torch.Tensor, packed: Packed) -> torch.Tensor:
    """Attention output [N, h*D] of rotated q|k [N, h+kv, D] and values [N, kv, D] over
    the packed rows (rlvr.accel.update.tree_attention's [G, heads, L, D] layout)."""
    s, layout = packed.shape, packed.layout
    groups, length = layout.groups, layout.length

    def heads_first(x: torch.Tensor) -> torch.Tensor:  # [N, n, D] -> [G, n, L, D]
        return x.view(groups, length, x.shape[1], s.head_dim).transpose(1, 2)

    out, _ = tree_attention(None, heads_first(rotated[:, :s.heads]),
                            heads_first(rotated[:, s.heads:]), heads_first(values), None,
                            scaling=s.scale, tree_layout=layout)  # [G, L, h, D]
    return out.reshape(groups * length, s.heads * s.head_dim)


def _weight_grads(grad: torch.Tensor, inputs: torch.Tensor, weight_slots: tuple[int, ...],
                  bias_slots: tuple[int, ...], widths: list[int], grads: list[Any],
                  wants: tuple[bool, ...]) -> None:
    """Weight gradients of linears sharing `inputs` [N, in] whose output gradients sit
    side by side in grad [N, sum(widths)]: one GEMM, split into row blocks."""
    if any(wants[i] for i in weight_slots):
        blocks = (grad.T @ inputs).split(widths)  # [out_i, in] each, contiguous
        for slot, block in zip(weight_slots, blocks):
            grads[slot] = block if wants[slot] else None
    if any(wants[i] for i in bias_slots):
        for slot, block in zip(bias_slots, grad.sum(0).split(widths)):
            grads[slot] = block if wants[slot] else None


def _normalize(x: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """(r, x * r) with r = rsqrt(mean(x^2) + eps) [N, 1]: RMSNorm before its weight, as
    transformers' LlamaRMSNorm computes it in float32."""
    inverse = torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)  # [N, 1]
    return inverse, x * inverse


def _norm_backward(grad_normed: torch.Tensor, normed: torch.Tensor, inverse: torch.Tensor,
                   weight: torch.Tensor, wants_weight: bool
                   ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(d x, d weight) of y = weight * normed, normed = x * inverse, given d y."""
    grad_weight = (grad_normed * normed).sum(0) if wants_weight else None  # [H]
    grad_hat = grad_normed.mul_(weight)  # [N, H]
    mean = (grad_hat * normed).mean(-1, keepdim=True)  # [N, 1]
    return grad_hat.sub_(normed * mean).mul_(inverse), grad_weight
