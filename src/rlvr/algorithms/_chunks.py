"""Row chunking shared by the logits reductions (logprobs.py, entropy.py).

Both reduce logits [B, T, V] over the vocabulary. Done naively, `logits.float()` and
`log_softmax` each materialise a float32 [B, T, V] (several GB for a 150k vocabulary),
and autograd keeps them alive until backward. Here the B*T rows are processed a chunk
at a time in float32, only [N]-sized results are saved, and backward recomputes the
chunk's softmax from the (already alive) logits.
"""

from __future__ import annotations

import torch
from torch import Tensor

# Rows per chunk are chosen so one float32 chunk holds about this many elements (64 MiB).
_CHUNK_ELEMENTS = 1 << 24


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float64 stays float64 (gradcheck); every other float type computes in float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def chunk_rows_for(vocab: int, chunk_rows: int | None) -> int:
    if chunk_rows is None:
        return max(1, _CHUNK_ELEMENTS // max(vocab, 1))
    if chunk_rows < 1:
        raise ValueError(f"chunk_rows must be >= 1, got {chunk_rows}")
    return chunk_rows


def check_logits(logits: Tensor, temperature: float) -> None:
    if logits.dim() != 3:
        raise ValueError(f"logits must be [B, T, V], got shape {tuple(logits.shape)}")
    if not logits.is_floating_point():
        raise TypeError(f"logits must be a float tensor, got {logits.dtype}")
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")


def scaled_chunk(flat_logits: Tensor, start: int, stop: int, temperature: float) -> Tensor:
    """Rows [start, stop) of [N, V] logits as compute-dtype z = logits / temperature. -> [C, V]"""
    z = flat_logits[start:stop].to(compute_dtype(flat_logits.dtype))  # [C, V]
    return z / temperature if temperature != 1.0 else z
