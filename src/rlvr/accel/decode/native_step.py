"""A whole Llama decode step in one native call (native/decode_step.c).

`FastLlama` builds a `NativeStep` from its layers whenever it rebuilds them (the weights
are read where they live: the addresses table is only valid until the next parameter
update, which is exactly when FastLlama rebuilds). A step then costs one call into C
instead of ~800 torch operations; see decode_step.c for why and for the numerics.
"""

from __future__ import annotations

import ctypes
from typing import Any

import torch

from rlvr.accel.decode import native_gemm
from rlvr.accel.decode.capture import SLOTS

# The per-layer address table's columns (decode_step.c's LAYER_FIELDS, same order).
LAYER_FIELDS = ("input_norm", "q", "k", "v", "q_bias", "k_bias", "v_bias", "o", "o_bias",
                "post_norm", "gate", "up", "gate_bias", "up_bias", "down", "down_bias")
MAX_HEAD_DIM = 512  # decode_step.c keeps one rotated query head on the stack


class DecodeArgs(ctypes.Structure):
    """decode_step.c's struct rlvr_decode_args (same fields, same order)."""
    _fields_ = [(name, ctypes.c_int64) for name in (
        "layers", "rows", "hidden", "heads", "kv_heads", "head_dim", "intermediate", "vocab",
        "column", "kv_layer_stride", "kv_row_stride", "kv_head_stride", "valid_stride",
        "threads", "score_stride")] + [("eps", ctypes.c_double), ("scale", ctypes.c_double)] + [
        (name, ctypes.c_void_p) for name in (
            "weights", "outputs", "stream", "cos", "sin", "keys", "values", "valid",
            "final_norm", "head", "head_bias", "logits", "normed", "attended", "activated",
            "scores")]


def _address(tensor: torch.Tensor | None) -> int:
    return 0 if tensor is None else tensor.data_ptr()


class NativeStep:
    """One FastLlama's weights bound to the native decode step.

    layers: FastLlama's `_Layer`s on the native GEMM (StackedDecodeLinear pieces,
    DecodeLinear o/down); head: the output projection's DecodeLinear; final_norm [H];
    widths: each GEMM's output width by capture slot (FastLlama.output_widths).
    Build with `NativeStep.bind(...)`, which returns None where the C step cannot run
    (kernels unavailable, a weight not contiguous float32 on CPU, head_dim too large).
    """

    def __init__(self, library: ctypes.CDLL, table: torch.Tensor, keep: list[torch.Tensor],
                 dims: dict[str, int], widths: dict[str, int], eps: float, scale: float,
                 final_norm: torch.Tensor, head: Any) -> None:
        self.library, self.table, self._keep = library, table, keep
        self.dims, self.eps, self.scale = dims, eps, scale
        self.widths = [widths[slot] for slot in SLOTS]  # outputs table column order
        self.final_norm, self.head = final_norm, head

    @classmethod
    def bind(cls, layers: list[Any], head: Any, final_norm: torch.Tensor,
             dims: dict[str, int], widths: dict[str, int], eps: float,
             scale: float) -> "NativeStep | None":
        library = native_gemm.load()
        if library is None or dims["head_dim"] > MAX_HEAD_DIM or dims["head_dim"] % 2:
            return None
        rows, keep = [], []
        for layer in layers:
            if layer.qkv.native is None or layer.gate_up.native is None:
                return None
            (q, k, v), (gate, up) = layer.qkv.pieces, layer.gate_up.pieces
            fields = {"input_norm": layer.input_norm, "post_norm": layer.post_norm}
            for name, linear in (("q", q), ("k", k), ("v", v), ("o", layer.o),
                                 ("gate", gate), ("up", up), ("down", layer.down)):
                fields[name], fields[f"{name}_bias"] = linear.weight, linear.bias
            tensors = [t for t in fields.values() if t is not None]
            if not all(t.device.type == "cpu" and t.dtype == torch.float32
                       and t.is_contiguous() for t in tensors):
                return None
            keep.extend(tensors)
            rows.append([_address(fields.get(name)) for name in LAYER_FIELDS])
        if not (native_gemm.usable(head.weight) and final_norm.is_contiguous()
                and final_norm.dtype == torch.float32):
            return None
        return cls(library, torch.tensor(rows, dtype=torch.int64), keep, dims, widths, eps,
                   scale, final_norm, head)

    def run(self, stream: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
            keys: torch.Tensor, values: torch.Tensor, valid: torch.Tensor, column: int,
            outputs: torch.Tensor | None, logits: torch.Tensor) -> None:
        """One decode step for b rows: stream [b, H] (the new tokens' embeddings; used as
        scratch), cos and signed sin [b, D], keys/values [layers, b, kv, C, D] (the new
        key and value are written at `column`), valid [b, >= column+1] bool, outputs
        [layers, 4] addresses of each GEMM's [b, width] output (None: scratch), logits
        [b, V] written."""
        d = self.dims
        b, hidden, heads, kv, head_dim = (stream.shape[0], d["hidden"], d["heads"],
                                          d["kv_heads"], d["head_dim"])
        scratch = []
        if outputs is None:  # one [b, width] buffer per GEMM, shared by all layers
            scratch = [torch.empty(b, w) for w in self.widths]
            outputs = torch.tensor([[t.data_ptr() for t in scratch]],
                                   dtype=torch.int64).expand(d["layers"], 4).contiguous()
        self._check(stream, cos, sin, keys, values, valid, column, logits)
        threads = torch.get_num_threads()
        score_stride = heads // kv * (column + 1)
        normed, attended = torch.empty(b, hidden), torch.empty(b, heads * head_dim)
        activated, scores = torch.empty(b, d["intermediate"]), torch.empty(threads, score_stride)
        args = DecodeArgs(
            layers=d["layers"], rows=b, hidden=hidden, heads=heads, kv_heads=kv,
            head_dim=head_dim, intermediate=d["intermediate"], vocab=d["vocab"], column=column,
            kv_layer_stride=keys.stride(0), kv_row_stride=keys.stride(1),
            kv_head_stride=keys.stride(2), valid_stride=valid.stride(0), threads=threads,
            score_stride=score_stride, eps=self.eps, scale=self.scale,
            weights=self.table.data_ptr(), outputs=outputs.data_ptr(),
            stream=stream.data_ptr(), cos=cos.data_ptr(), sin=sin.data_ptr(),
            keys=keys.data_ptr(), values=values.data_ptr(), valid=valid.data_ptr(),
            final_norm=self.final_norm.data_ptr(), head=self.head.weight.data_ptr(),
            head_bias=_address(self.head.bias), logits=logits.data_ptr(),
            normed=normed.data_ptr(), attended=attended.data_ptr(),
            activated=activated.data_ptr(), scores=scores.data_ptr())
        if self.library.rlvr_decode_step(ctypes.byref(args)) != 0:
            raise RuntimeError("the native decode step refused these shapes")
        del scratch  # kept alive through the call

    def _check(self, stream: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
               keys: torch.Tensor, values: torch.Tensor, valid: torch.Tensor, column: int,
               logits: torch.Tensor) -> None:
        """The C code trusts every shape and stride it is given: refuse anything else
        (a partial rotary embedding, a foreign buffer layout) before it reads memory."""
        d = self.dims
        b, head_dim = stream.shape[0], d["head_dim"]
        expected = {"stream": (stream, (b, d["hidden"])), "cos": (cos, (b, head_dim)),
                    "sin": (sin, (b, head_dim)), "logits": (logits, (b, d["vocab"]))}
        for name, (tensor, shape) in expected.items():
            if (tuple(tensor.shape) != shape or tensor.dtype != torch.float32
                    or not tensor.is_contiguous()):
                raise ValueError(f"native decode step: {name} must be contiguous float32 "
                                 f"{shape}, got {tensor.dtype} {tuple(tensor.shape)}")
        layout = (d["layers"], b, d["kv_heads"])
        for name, tensor in (("keys", keys), ("values", values)):
            if (tuple(tensor.shape[:3]) != layout or tensor.shape[3] <= column
                    or tensor.shape[4] != head_dim or tensor.stride()[3:] != (head_dim, 1)
                    or tensor.stride() != keys.stride() or tensor.dtype != torch.float32):
                raise ValueError(f"native decode step: {name} must be float32 "
                                 f"[{', '.join(map(str, layout))}, > {column}, {head_dim}] "
                                 f"with contiguous columns, like keys; got "
                                 f"{tuple(tensor.shape)} strides {tensor.stride()}")
        if (valid.dtype != torch.bool or valid.shape[0] != b or valid.shape[1] <= column
                or valid.stride(1) != 1):
            raise ValueError(f"native decode step: valid must be bool [{b}, > {column}] with "
                             f"contiguous columns, got {valid.dtype} {tuple(valid.shape)}")
