"""Linear layers for decoding, on the GEMM that streams the weights fastest.

Decoding multiplies a few rows (the live samples) by every weight matrix once per new
token, so it is bound by how fast the GEMM streams the weights. Three paths, best first:
  - rlvr's native decode GEMM (rlvr.accel.decode.native_gemm, compiled on first use) for calls
    of up to `native_gemm.MAX_ROWS` rows, on the weight in its plain row-major layout;
    calls with more rows (a prompt prefill) go to oneDNN (else `F.linear`) on that same
    plain copy, so the snapshot holds the weights once and building it is one copy;
  - where the kernel cannot be built: oneDNN with the weight reordered once into its
    blocked layout (`torch.ops.mkldnn._linear_pointwise` on a weight from
    `torch.ops.mkldnn._reorder_linear_weight`, the ops torch's compiled CPU inference
    path uses), which streams a decode product ~2-3x faster than MKL's `F.linear`;
  - off CPU, or where torch lacks the oneDNN ops, `F.linear`.
All are plain float32 math (results agree with `F.linear` to float32 rounding); speeds
are in benchmarks/RESULTS.md (bench_decode_gemm.py, bench_rollout.py).

`DecodeLinear` is a frozen snapshot: callers rebuild it when the source weights change.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F

from rlvr.accel.decode import native_gemm

_ROWS_HINT = 8  # rows per call the blocked layout is tuned for (a decode batch)
# Tensors `fused` made that no caller can have changed: a DecodeLinear keeps them as is.
_FRESH: weakref.WeakValueDictionary[int, torch.Tensor] = weakref.WeakValueDictionary()


def onednn_available() -> bool:
    ops = getattr(torch.ops, "mkldnn", None)
    return (torch.backends.mkldnn.is_available() and ops is not None
            and hasattr(ops, "_reorder_linear_weight") and hasattr(ops, "_linear_pointwise"))


class DecodeLinear:
    """y = x @ weight.T + bias for x [..., in] (no autograd; inference only).

    weight [out, in] and bias [out] are copied (reordered for oneDNN; a weight `fused`
    just made is taken over as is), so later in-place updates of the source parameters
    do not reach this snapshot. By default the native
    kernel is used when it loads, else oneDNN when available, else `F.linear`;
    `use_native` / `use_onednn` force a path (True) or rule it out (False).
    borrow: on the native and `F.linear` paths, multiply by `weight` where it lives (no
    copy); the caller promises not to change it while this object is in use (FastLlama
    rebuilds its layers whenever a parameter's version moved).
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None,
                 use_onednn: bool | None = None, use_native: bool | None = None,
                 borrow: bool = False) -> None:
        made_by_fused = _FRESH.pop(id(weight), None) is weight
        weight = weight.detach()
        cpu_float = weight.device.type == "cpu" and weight.dtype == torch.float32
        # The default is the native kernel when it loads; asked for by name, it must load.
        wanted = use_native if use_native is not None else use_onednn is None and cpu_float
        self.native = native_gemm.load() if wanted and cpu_float else None  # the library
        if use_native and self.native is None:
            raise RuntimeError("the native decode GEMM is unavailable: it needs CPU float32 "
                               "weights, a C compiler and RLVR_NATIVE_KERNELS unset or 1 (the "
                               "debug log of rlvr.accel.decode.native_gemm says what failed)")
        if use_onednn is None:
            use_onednn = self.native is None and cpu_float and onednn_available()
        self.onednn = self.native is None and use_onednn  # weight in oneDNN's blocked layout
        # oneDNN also takes the plain row-major weight, and for prefill-sized calls (~100
        # rows) runs ~1.5x faster than MKL's F.linear on it (bench_decode_gemm.py).
        self.onednn_call = self.onednn or (self.native is not None and onednn_available())
        self.bias = (None if bias is None
                     else bias.detach().clone(memory_format=torch.contiguous_format))
        if self.onednn:
            self.weight = torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), _ROWS_HINT)
        elif (made_by_fused or borrow) and weight.is_contiguous():
            self.weight = weight  # [out, in]: made by `fused` for this layer alone, or lent
        else:
            self.weight = weight.clone(memory_format=torch.contiguous_format)  # [out, in]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.native is not None:
            rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
            if (0 < rows <= native_gemm.MAX_ROWS and x.dtype == torch.float32
                    and x.device.type == "cpu"):
                y = native_gemm.decode_linear(self.native, x.reshape(rows, x.shape[-1]),
                                              self.weight, self.bias)  # [rows, out]
                return y.view(*x.shape[:-1], y.shape[-1])
        if self.onednn_call:
            return torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, "none", [], "")
        return F.linear(x, self.weight, self.bias)


class StackedDecodeLinear:
    """y = x @ cat(weights).T + cat(biases) for projections of one input (q|k|v,
    gate|up), without concatenating the weights: on the native kernel each piece writes
    its own columns of one output, reading its weight where it lives (borrowed, as
    `DecodeLinear(borrow=True)`: a snapshot rebuilt every RL step then copies nothing).
    Elsewhere, one `DecodeLinear` on the fused copy. Same results either way."""

    def __init__(self, weights: list[torch.Tensor], biases: list[torch.Tensor | None]) -> None:
        pieces = [w.detach() for w in weights]
        self.native = (native_gemm.load() if all(native_gemm.usable(w) for w in pieces)
                       else None)
        self.whole = None if self.native is not None else DecodeLinear(fused(*pieces),
                                                                      fused_bias(*biases))
        self.pieces = [DecodeLinear(w, b, borrow=True) for w, b in zip(pieces, biases)
                       ] if self.native is not None else []
        self.widths = [w.shape[0] for w in pieces]

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.whole is not None:
            return self.whole(x)
        rows = x.numel() // x.shape[-1] if x.shape[-1] else 0
        if not 0 < rows <= native_gemm.MAX_ROWS or x.dtype != torch.float32:
            return torch.cat([piece(x) for piece in self.pieces], dim=-1)  # a prefill
        flat = x.reshape(rows, x.shape[-1])  # [M, in]
        y = torch.empty(rows, sum(self.widths), dtype=torch.float32)  # [M, sum(out_i)]
        start = 0
        for piece, width in zip(self.pieces, self.widths):
            native_gemm.decode_linear(self.native, flat, piece.weight, piece.bias,
                                      out=y[:, start:start + width])
            start += width
        return y.view(*x.shape[:-1], y.shape[-1])


def fused(*weights: torch.Tensor) -> torch.Tensor:
    """Concatenate weights [out_i, in] along the output dimension: one GEMM computes
    several projections of the same input (q, k, v; gate, up). The result is a new
    tensor meant for one `DecodeLinear`, which takes it over instead of copying it again
    (a snapshot is rebuilt every RL step; the copy would be a third of its cost)."""
    weight = torch.cat([w.detach() for w in weights], dim=0)  # [sum(out_i), in]
    _FRESH[id(weight)] = weight
    return weight


def fused_bias(*biases: torch.Tensor | None) -> torch.Tensor | None:
    if all(b is None for b in biases):
        return None
    if any(b is None for b in biases):
        raise ValueError("either every fused projection has a bias or none does")
    return torch.cat([b.detach() for b in biases])
