"""Linear layers for decoding, in the weight layout the CPU GEMM reads fastest.

Decoding multiplies a few rows (the live samples) by every weight matrix once per new
token, so it is bound by how fast the GEMM streams the weights. On an AMD EPYC (AVX2)
torch's default path (MKL sgemm through `F.linear`) streams a [8, 576] x [576, 49152]
product at ~4 GB/s; oneDNN with the weight reordered once into its blocked layout
streams it at ~13 GB/s, and a SmolLM2 decode step as a whole runs ~2x faster
(benchmarks/RESULTS.md, bench_rollout.py). oneDNN is the library torch itself uses for this in its
compiled CPU inference path (`torch.ops.mkldnn._linear_pointwise` on a weight from
`torch.ops.mkldnn._reorder_linear_weight`); the math is plain float32 (results agree
with `F.linear` to float32 rounding).

`DecodeLinear` is a frozen snapshot: callers rebuild it when the source weights change.
Off CPU, or where torch lacks the oneDNN ops, it is `F.linear` on a copy of the weight.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

_ROWS_HINT = 8  # rows per call the blocked layout is tuned for (a decode batch)


def onednn_available() -> bool:
    ops = getattr(torch.ops, "mkldnn", None)
    return (torch.backends.mkldnn.is_available() and ops is not None
            and hasattr(ops, "_reorder_linear_weight") and hasattr(ops, "_linear_pointwise"))


class DecodeLinear:
    """y = x @ weight.T + bias for x [..., in] (no autograd; inference only).

    weight [out, in] and bias [out] are copied (reordered on CPU), so later in-place
    updates of the source parameters do not reach this snapshot.
    """

    def __init__(self, weight: torch.Tensor, bias: torch.Tensor | None = None,
                 use_onednn: bool | None = None) -> None:
        weight = weight.detach()
        if use_onednn is None:
            use_onednn = (weight.device.type == "cpu" and weight.dtype == torch.float32
                          and onednn_available())
        self.bias = None if bias is None else bias.detach().clone()
        self.onednn = use_onednn
        if use_onednn:
            self.weight = torch.ops.mkldnn._reorder_linear_weight(weight.contiguous(), _ROWS_HINT)
        else:
            self.weight = weight.clone()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        if self.onednn:
            return torch.ops.mkldnn._linear_pointwise(x, self.weight, self.bias, "none", [], "")
        return F.linear(x, self.weight, self.bias)


def fused(*weights: torch.Tensor) -> torch.Tensor:
    """Concatenate weights [out_i, in] along the output dimension: one GEMM computes
    several projections of the same input (q, k, v; gate, up)."""
    return torch.cat([w.detach() for w in weights], dim=0)  # [sum(out_i), in]


def fused_bias(*biases: torch.Tensor | None) -> torch.Tensor | None:
    if all(b is None for b in biases):
        return None
    if any(b is None for b in biases):
        raise ValueError("either every fused projection has a bias or none does")
    return torch.cat([b.detach() for b in biases])
