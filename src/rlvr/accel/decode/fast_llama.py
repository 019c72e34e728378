"""A decode-only forward for Llama-family models (Llama, SmolLM2, Qwen2, Mistral without
sliding windows), for the rollout engine's sampling loop.

Why not the transformers forward: at decode time (a few rows, one new token each) a
step of SmolLM2-135M through `LlamaForCausalLM` on a 2-core CPU spends ~75% of its time
in MKL GEMMs streaming weights at 4-12 GB/s, ~12% growing the KV cache with `torch.cat`
every layer, and the rest in per-module work. This forward computes the same function
with fewer, larger operations over the model's own weights:
  - q, k and v come out as one output, gate and up as another: on rlvr's native decode
    GEMM each piece writes its columns, reading the model's weights where they live;
    without the kernel, one GEMM over a fused copy in oneDNN's blocked layout
    (rlvr.accel.decode.decode_linear; both stream weights 2-3x faster than MKL's F.linear);
  - keys and values go into a buffer allocated once for the whole completion length;
  - grouped-query attention without repeating keys and values: the query heads that
    share a key/value head are treated as that head's query rows (at decode, two
    batched GEMMs and a softmax, the mask added as a bias inside the first GEMM).
The math is the transformers forward's (same RMSNorm, rotary embedding module, scaling
and activation), float32 throughout on CPU; tests compare logits and sampled
log-probabilities against it. The layers (and any copies) are rebuilt when any
parameter changed (torch bumps a tensor's version on every in-place update, which is
how optimizers write). With `keep_activations` every GEMM's output and the logits are
also kept for the update (rlvr.accel.decode.capture, rlvr.accel.update.replay).

Decode steps of up to `native_gemm.MAX_ROWS` rows run as one native call when the
kernels load (rlvr.accel.decode.native_step: the same math, every layer in one OpenMP
region, ~1.3x faster per generation than these torch ops); the prefill, larger steps
and non-float32 models use the torch forward below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from rlvr.models.families import ATTENTION, MLP, supports_fast_decode, unwrap
from rlvr.accel.decode import native_gemm
from rlvr.accel.decode.capture import SLOTS, ActivationCapture, CaptureShape
from rlvr.accel.decode.decode_linear import DecodeLinear, StackedDecodeLinear
from rlvr.accel.decode.native_step import MAX_HEAD_DIM, NativeStep
from rlvr.accel.decode.rotary import rotate, signed_sin, swap_halves

_FIRST_COLUMNS = 64  # new-token columns allocated up front (the buffer doubles as needed)

# The family check lives in rlvr.models.families; this module's name for it.
supports = supports_fast_decode


def why_not_native(model: Any) -> str:
    """Why decode steps of `model` will not run as one native call ("" when they will):
    the kernels are off or failed to build, or the weights are not what they take."""
    off = native_gemm.why_off()
    if off:
        return off
    base = unwrap(model)
    dtypes = {p.dtype for p in base.parameters()}
    if dtypes != {torch.float32}:
        names = ", ".join(sorted(str(d).removeprefix("torch.") for d in dtypes))
        return f"the native kernels take float32 weights; the model has {names}"
    head_dim = getattr(base.config, "head_dim", None) or (base.config.hidden_size
                                                          // base.config.num_attention_heads)
    if head_dim > MAX_HEAD_DIM or head_dim % 2:
        return f"the native step takes an even head_dim up to {MAX_HEAD_DIM}; this has {head_dim}"
    return ""


def effective_linear(module: Any) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(weight [out, in], bias) a linear layer applies: for a peft LoRA layer, the base
    weight plus each active, unmerged adapter's scaled B @ A (dropout is off when
    sampling)."""
    base = getattr(module, "base_layer", None)
    if base is None:
        return module.weight, module.bias
    weight = base.weight
    if not getattr(module, "merged", False) and not getattr(module, "disable_adapters", False):
        for name in module.active_adapters:
            if name in module.lora_A:
                weight = weight + module.get_delta_weight(name)
    return weight, base.bias


@dataclass
class _Layer:
    qkv: StackedDecodeLinear
    o: DecodeLinear
    gate_up: StackedDecodeLinear
    down: DecodeLinear
    input_norm: torch.Tensor      # [H] (the live parameter)
    post_norm: torch.Tensor       # [H]


class FastLlama:
    """Prefill + decode steps over a preallocated KV buffer.

    Use: `start(...)` with the left-padded prompts, then `step(...)` once per new token;
    `keep(rows)` drops finished rows. One sequence of calls at a time.
    """

    def __init__(self, model: Any) -> None:
        if not supports(model):
            raise ValueError(f"{type(model).__name__} is not a supported Llama-family model")
        self.model = model  # the engine's model (a peft wrapper when LoRA is on)
        self.base = unwrap(model)
        config = self.base.config
        self.heads = config.num_attention_heads
        self.kv_heads = getattr(config, "num_key_value_heads", None) or self.heads
        self.head_dim = getattr(config, "head_dim", None) or config.hidden_size // self.heads
        self.intermediate = config.intermediate_size
        self.eps = self.base.model.norm.variance_epsilon
        # RMSNorm's divisor and epsilon as 0-dim tensors: an in-place op with a Python
        # scalar pays a dtype conversion of the wrapped scalar on every call.
        self._width = torch.tensor(float(config.hidden_size))
        self._eps = torch.tensor(self.eps, dtype=torch.float32)
        self.scale = self.base.model.layers[0].self_attn.scaling
        self._layers: list[_Layer] | None = None
        self._running: list[_Layer] = []  # this call's layers (recording when kept)
        self._head: DecodeLinear | None = None
        self._native: NativeStep | None = None  # the whole decode step in C, when it loads
        self._versions: tuple[int, ...] | None = None
        self.capture: ActivationCapture | None = None  # the current call's, when kept
        self.row_ids = torch.zeros(0, dtype=torch.long)  # generation row of each live row

    # --- weight snapshots ---------------------------------------------------------

    def release(self) -> None:
        """Free the weight snapshots (they are rebuilt on the next `start`)."""
        self._layers = self._head = self._versions = self._native = None
        self._running = []

    def _refresh(self) -> None:
        versions = tuple(p._version for p in self.model.parameters())
        if self._layers is not None and versions == self._versions:
            return
        with torch.no_grad():
            self._layers = [self._snapshot(layer) for layer in self.base.model.layers]
            self._head = DecodeLinear(*effective_linear(self.base.lm_head), borrow=True)
            self._native = NativeStep.bind(self._layers, self._head, self.base.model.norm.weight,
                                           self._dims(), self.output_widths(), self.eps,
                                           self.scale)
        self._versions = versions

    def _dims(self) -> dict[str, int]:
        return {"layers": len(self._layers), "hidden": self.base.config.hidden_size,
                "heads": self.heads, "kv_heads": self.kv_heads, "head_dim": self.head_dim,
                "intermediate": self.intermediate, "vocab": self._head.weight.shape[0]}

    @staticmethod
    def _snapshot(layer: Any) -> _Layer:
        (q, q_bias), (k, k_bias), (v, v_bias), o = (
            effective_linear(getattr(layer.self_attn, name)) for name in ATTENTION)
        (gate, gate_bias), (up, up_bias), down = (
            effective_linear(getattr(layer.mlp, name)) for name in MLP)
        # Borrowed weights: `_refresh` rebuilds every layer when a parameter changed.
        return _Layer(
            qkv=StackedDecodeLinear([q, k, v], [q_bias, k_bias, v_bias]),
            o=DecodeLinear(*o, borrow=True),
            gate_up=StackedDecodeLinear([gate, up], [gate_bias, up_bias]),
            down=DecodeLinear(*down, borrow=True),
            input_norm=layer.input_layernorm.weight, post_norm=layer.post_attention_layernorm.weight)

    # --- the sampling loop's interface --------------------------------------------

    def capture_shape(self, prompts: int, prompt_width: int, n: int,
                      max_new_tokens: int) -> CaptureShape:
        """What keeping this call's activations would hold (`CaptureShape.nbytes`)."""
        return CaptureShape(len(self.base.model.layers), self.output_widths(),
                            self.base.config.vocab_size, prompts, prompt_width, n,
                            max_new_tokens)

    def output_widths(self) -> dict[str, int]:
        """Each layer GEMM's output width, by capture slot (SLOTS order)."""
        h, kv, d = self.heads, self.kv_heads, self.head_dim
        hidden = self.base.config.hidden_size
        return {"qkv": (h + 2 * kv) * d, "o": hidden, "gate_up": 2 * self.intermediate,
                "down": hidden}

    @torch.inference_mode()
    def start(self, input_ids: torch.Tensor, mask: torch.Tensor, positions: torch.Tensor,
              n: int, max_new_tokens: int, keep_activations: bool = False,
              prefix: Any = None) -> torch.Tensor:
        """Prefill left-padded prompts input_ids/mask/positions [B, P] once each, then hold
        n copies of every prompt's keys/values (rows b*n .. b*n+n-1 are prompt b).
        Returns the next-token logits [B*n, V]. keep_activations: keep every GEMM's
        output and the logits in `self.capture` (rlvr.accel.decode.capture). prefix: kept
        keys/values the prompts continue (rlvr.rollout.prefix_store.PrefixBatch: its
        `width` columns come first, input_ids are the tokens after them)."""
        self._refresh()
        batch, width = input_ids.shape
        cached = 0 if prefix is None else prefix.width
        self.capture = None
        if keep_activations and cached:
            raise ValueError("kept activations cover whole prompts: prefill without a prefix")
        if keep_activations:
            self.capture = ActivationCapture(
                self.capture_shape(batch, width, n, max_new_tokens),
                mask.sum(1).tolist(), self._versions, self.model, self._dtype(),
                input_ids.device)
            self.capture.begin_prefill()
        self._running = self._layers if self.capture is None else self._recorded_layers()
        self.row_ids = torch.arange(batch * n)
        self.prompt_columns = width
        layers = len(self._layers)
        # Room for the prompt and the first new tokens; `_grow` doubles it when full, so
        # a batch whose rows stop early never holds keys for the whole length limit.
        capacity = cached + width + min(max_new_tokens, _FIRST_COLUMNS)
        shape = (layers, batch * n, self.kv_heads, capacity, self.head_dim)
        self.keys = torch.empty(shape, dtype=self._dtype(), device=input_ids.device)
        self.values = torch.empty_like(self.keys)
        self.valid = torch.zeros((batch * n, capacity), dtype=torch.bool, device=input_ids.device)
        self.valid[:, cached:cached + width] = mask.bool().repeat_interleave(n, 0)
        self.length = cached  # the prefill writes columns cached .. cached+P
        self.next_pos = positions[:, -1:].repeat_interleave(n, 0) + 1  # [B*n, 1]
        # Prompt tokens attend causally to the real tokens before them; every query may
        # also see itself, so padding rows never have an empty softmax (NaN).
        causal = torch.ones(width, width, dtype=torch.bool, device=input_ids.device).tril()
        allowed = (causal & mask.bool()[:, None, :]) | torch.eye(width, dtype=torch.bool,
                                                                  device=input_ids.device)
        if cached:  # and every kept key/value of its own prompt
            # zeros under the padding: masked columns weigh 0, and 0 * garbage may be NaN
            self.keys[:, :, :, :cached] = 0
            self.values[:, :, :, :cached] = 0
            prefix.write(self.keys, self.values, n)
            self.valid[:, :cached] = prefix.valid.repeat_interleave(n, 0)
            allowed = torch.cat([prefix.valid[:, None, :].expand(batch, width, cached),
                                 allowed], dim=-1)  # [B, P, cached+P]
        hidden = self._forward(input_ids, positions, allowed[:, None], n)  # [B, P, H]
        logits = self._logits(hidden[:, -1])  # [B, V]
        return logits.repeat_interleave(n, 0)  # [B*n, V]

    @torch.inference_mode()
    def step(self, token: torch.Tensor, alive: torch.Tensor) -> torch.Tensor:
        """Append token [b] (alive [b]: False for rows that already finished, whose
        token is padding no later step should see); returns next-token logits [b, V]."""
        if self.length == self.valid.shape[1]:
            self._grow()
        if self.capture is not None:
            self.capture.begin_step(self.row_ids, self.length - self.prompt_columns)
        self.valid[:, self.length] = alive
        if self._native is not None and token.shape[0] <= native_gemm.MAX_ROWS:
            logits = self._native_step(token)  # [b, V]
        else:
            hidden = self._forward(token[:, None], self.next_pos, self._decode_bias(), 1)
            logits = self._logits(hidden[:, -1])  # [b, V]
        self.next_pos = self.next_pos + 1
        return logits

    def _native_step(self, token: torch.Tensor) -> torch.Tensor:
        """The decode step in one native call (rlvr.accel.decode.native_step): the GEMM outputs
        go straight into the capture's pools when activations are kept."""
        inner, b = self.base.model, token.shape[0]
        stream = F.embedding(token, inner.embed_tokens.weight)  # [b, H]
        cos, sin = inner.rotary_emb(stream[:, None], self.next_pos)  # [b, 1, D] each
        cos, sin = cos[:, 0].contiguous(), signed_sin(sin[:, 0]).contiguous()  # [b, D]
        if self.capture is not None:
            outputs, logits = self.capture.step_outputs(), self.capture.next_logits(b)
        else:
            outputs, logits = None, torch.empty(b, self._head.weight.shape[0])  # [b, V]
        self._native.run(stream, cos, sin, self.keys, self.values, self.valid, self.length,
                         outputs, logits)
        self.length += 1
        return logits

    def _decode_bias(self) -> torch.Tensor:
        """The decode step's attention mask as an additive bias [b*kv, 1, L] (0 where a
        column is visible, -inf where not), one row per (row, key/value head): the
        layout `_attention` adds to its scores in the same GEMM call."""
        visible = self.valid[:, None, :self.length + 1]  # [b, 1, L]
        bias = torch.zeros(visible.shape, dtype=self._dtype(), device=visible.device)
        bias.masked_fill_(~visible, float("-inf"))
        return bias.repeat_interleave(self.kv_heads, 0)  # [b*kv, 1, L]

    def _grow(self) -> None:
        """Double the key/value buffers' column capacity (copying what they hold)."""
        extra = self.valid.shape[1]
        pad = lambda t: torch.cat([t, torch.empty_like(t)], dim=3)  # noqa: E731 [.., C, D]
        self.keys, self.values = pad(self.keys), pad(self.values)
        self.valid = torch.cat([self.valid, self.valid.new_zeros(self.valid.shape[0], extra)], 1)

    def end(self) -> None:
        """Drop this call's key/value cache: the sampling loop is done with it. Held
        until the next `start`, it stayed resident through the update, the evaluation
        and the checkpoint that followed the call (all of it since `keep` compacts in
        place: 1.1 GB after 200 greedy rows of SmolLM2). The weight snapshots stay."""
        self.keys = self.values = self.valid = None

    can_keep = True

    def export(self, row: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Live row `row`'s keys and values [layers, kv, L, D] of the L tokens it fed
        (its prompt and sampled tokens, in order; padding left out), copied out."""
        columns = self.valid[row, :self.length].nonzero()[:, 0]  # [L]
        return (self.keys[:, row].index_select(2, columns),
                self.values[:, row].index_select(2, columns))

    @torch.inference_mode()  # the buffers are inference tensors, written in place here
    def keep(self, rows: torch.Tensor) -> None:
        """Keep only `rows` [b'] of the batch (finished rows leave).

        The key/value buffers are compacted in place, one layer at a time, into their
        first b' rows, and narrowed to them (a view: both decode steps take the layer
        stride as it is). Gathering into new buffers instead held the old keys and
        values and both copies at once: with 200 greedy rows of SmolLM2 (the trainer's
        held-out evaluation) ~0.7 GB above the cache itself, the largest transient of
        a generate call (benchmarks/tools/profile_learning.py). The buffers keep their first
        size until the call ends, a size the call has already reached."""
        count = rows.numel()
        for buffer in (self.keys, self.values):
            for layer in buffer:  # [b, kv, C, D]; the gather copies before it writes
                layer[:count] = layer[rows]
        self.keys, self.values = self.keys[:, :count], self.values[:, :count]
        self.valid, self.next_pos = self.valid[rows], self.next_pos[rows]
        self.row_ids = self.row_ids[rows.cpu()]

    # --- the forward --------------------------------------------------------------

    def _forward(self, ids: torch.Tensor, positions: torch.Tensor, allowed: torch.Tensor,
                 repeat: int) -> torch.Tensor:
        """Run ids [b, s] at positions [b, s] through every layer, writing keys/values at
        columns length .. length+s (each row repeated `repeat` times in the buffer).
        allowed: bool attention mask broadcastable to [b, heads, s, length+s]; for a
        decode step (s = 1, repeat = 1) the additive bias of `_decode_bias` instead."""
        inner = self.base.model
        hidden = F.embedding(ids, inner.embed_tokens.weight)  # [b, s, H]
        cos, sin = inner.rotary_emb(hidden, positions)  # [b, s, D] each
        cos, sin = cos[:, :, None], signed_sin(sin)[:, :, None]  # [b, s, 1, D]
        start, stop = self.length, self.length + ids.shape[1]
        for index, layer in enumerate(self._running):
            normed = self._rms_norm(hidden, layer.input_norm)
            keys, values = self.keys[index], self.values[index]  # [b*repeat, kv, C, D]
            attended = self._attention(layer, normed, cos, sin, keys, values, allowed,
                                       start, stop, repeat)  # [b, s, heads*D]
            hidden = hidden + layer.o(attended)
            normed = self._rms_norm(hidden, layer.post_norm)
            gate, up = layer.gate_up(normed).split(self.intermediate, dim=-1)  # [b, s, I] each
            hidden = hidden + layer.down(F.silu(gate) * up)
        self.length = stop
        return hidden

    def _attention(self, layer: _Layer, normed: torch.Tensor, cos: torch.Tensor,
                   sin: torch.Tensor, keys: torch.Tensor, values: torch.Tensor,
                   allowed: torch.Tensor, start: int, stop: int, repeat: int) -> torch.Tensor:
        b, s, _ = normed.shape
        h, kv, d = self.heads, self.kv_heads, self.head_dim
        qkv = layer.qkv(normed).view(b, s, h + 2 * kv, d)  # [b, s, h+2kv, D]
        if s == 1 and repeat == 1:
            return self._decode_attention(qkv[:, 0], cos[:, 0], sin[:, 0], keys, values,
                                          allowed, start)
        qk = rotate(qkv[:, :, :h + kv], cos, sin)  # [b, s, h+kv, D]
        q = qk[:, :, :h].transpose(1, 2)  # [b, h, s, D]
        k = qk[:, :, h:].transpose(1, 2)  # [b, kv, s, D]
        v = qkv[:, :, h + kv:].transpose(1, 2)  # [b, kv, s, D]
        if repeat > 1:
            k, v = k.repeat_interleave(repeat, 0), v.repeat_interleave(repeat, 0)
        keys[:, :, start:stop] = k
        values[:, :, start:stop] = v
        # A prefill holds each prompt's keys `repeat` times: attend within the b prompts.
        k, v = keys[::repeat, :, :stop], values[::repeat, :, :stop]  # [b, kv, L, D]
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=self.scale,
                                             enable_gqa=kv != h)  # [b, h, s, D]
        return out.transpose(1, 2).reshape(b, s, h * d)

    def _decode_attention(self, qkv: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                          keys: torch.Tensor, values: torch.Tensor, bias: torch.Tensor,
                          column: int) -> torch.Tensor:
        """One new token per row: qkv [b, h+2kv, D], cos/sin [b, 1, D], bias [b*kv, 1, L]
        (from `_decode_bias`). Writes the row's key and value at `column` and returns
        the attention output [b, 1, h*D].

        Plain batched GEMMs rather than SDPA: for g = h/kv query rows per key/value head
        and a few hundred keys, SDPA's flash kernel and its bool-mask conversion took
        1.2-1.3x the time of these three calls (SmolLM2, 8 rows, profiled; both are
        mostly reading the keys and values from memory). The g query heads that share a
        key/value head are that head's rows, so no key or value is repeated."""
        b = qkv.shape[0]
        h, kv, d = self.heads, self.kv_heads, self.head_dim
        length = column + 1
        swapped = swap_halves(qkv[:, :h + kv])  # [b, h+kv, D]
        q = qkv[:, :h] * cos  # [b, h, D], contiguous: its (row, kv head) blocks are views
        q.addcmul_(swapped[:, :h], sin)
        new_keys = keys[:, :, column]  # [b, kv, D], rotated in place in the buffer
        torch.mul(qkv[:, h:h + kv], cos, out=new_keys)
        new_keys.addcmul_(swapped[:, h:], sin)
        values[:, :, column] = qkv[:, h + kv:]
        q = q.view(b * kv, h // kv, d)  # [b*kv, g, D]
        k = keys[:, :, :length].flatten(0, 1)  # [b*kv, L, D]
        v = values[:, :, :length].flatten(0, 1)  # [b*kv, L, D]
        scores = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=self.scale)  # [b*kv, g, L]
        out = torch.bmm(torch.softmax(scores, -1), v)  # [b*kv, g, D]
        return out.view(b, 1, h * d)  # head-major, as transformers lays it

    def _rms_norm(self, hidden: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        """transformers' LlamaRMSNorm, value for value (x*x is pow(x, 2) exactly and
        mean is sum / width), in fewer dispatches: `pow`, `mean` and a Python-scalar
        add each pay a dtype conversion; the in-place tail saves allocations.
        (`F.rms_norm` is no help here: on CPU it is the same composite.)"""
        square_sum = (hidden * hidden).sum(-1, keepdim=True)  # [b, s, 1]
        inverse_rms = square_sum.div_(self._width).add_(self._eps).rsqrt_()
        return weight * (hidden * inverse_rms)

    def _logits(self, last: torch.Tensor) -> torch.Tensor:
        logits = self._head(self._rms_norm(last, self.base.model.norm.weight))  # [b, V]
        if self.capture is not None:
            self.capture.put_logits(logits)
        return logits

    def _recorded_layers(self) -> list[_Layer]:
        """The layers with every GEMM also writing its output into `self.capture`."""
        return [_Layer(*(_Recorded(getattr(layer, slot), self.capture, index, slot)
                         for slot in SLOTS), layer.input_norm, layer.post_norm)
                for index, layer in enumerate(self._layers)]

    def _dtype(self) -> torch.dtype:
        return self.base.model.embed_tokens.weight.dtype


class _Recorded:
    """A DecodeLinear whose outputs are also kept in an ActivationCapture."""

    def __init__(self, linear: DecodeLinear, capture: ActivationCapture, layer: int,
                 slot: str) -> None:
        self.linear, self.capture, self.layer, self.slot = linear, capture, layer, slot

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        out = self.linear(x)
        self.capture.put(self.layer, self.slot, out)
        return out
