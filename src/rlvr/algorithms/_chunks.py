"""Row chunking shared by the logits reductions (logprobs.py, entropy.py).

Both reduce logits [B, T, V] over the vocabulary. Done naively, `logits.float()` and
`log_softmax` each materialise a float32 [B, T, V] (several GB for a 150k vocabulary),
and autograd keeps them alive until backward. Here the B*T rows are processed a chunk
at a time in float32 (custom autograd functions), only [N]-sized results are saved for
backward, and backward recomputes each chunk's softmax from the logits, which the
caller holds anyway. The gradient is written into one tensor of the logits' dtype.
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch import Tensor

# Rows per chunk are chosen so one float32 chunk holds about this many elements. On CPU a
# small chunk (4 MiB) stays in the allocator's and the caches' reach: in
# benchmarks/kernels/bench_logprobs.py 64 MiB chunks were 2x slower than the naive computation
# and 4 MiB chunks faster than it. On an accelerator, per-chunk kernel launches cost
# more than memory, so chunks are larger there (64 MiB).
_CHUNK_ELEMENTS_CPU = 1 << 20
_CHUNK_ELEMENTS_ACCELERATOR = 1 << 24


def compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float64 stays float64 (gradcheck); every other float type computes in float32."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def chunk_rows_for(logits: Tensor, chunk_rows: int | None) -> int:
    """Rows per chunk: the caller's choice, or a default from the vocabulary and device."""
    if chunk_rows is None:
        elements = (_CHUNK_ELEMENTS_CPU if logits.device.type == "cpu"
                    else _CHUNK_ELEMENTS_ACCELERATOR)
        return max(1, elements // max(logits.shape[-1], 1))
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


def row_blocks(logits: Tensor, chunk_rows: int) -> Iterator[tuple[int, int, Tensor]]:
    """Yield (start, stop, block) covering the B*T rows of [B, T, V] logits in order.

    block is a [C, V] view of rows [start, stop) of the flattened logits. A causal LM's
    logits are often sliced (logits[:, :-1]), which cannot be flattened without copying
    the whole tensor; then blocks are taken within one batch row at a time instead.
    """
    batch, time, vocab = logits.shape
    try:
        flat = logits.view(batch * time, vocab)  # [N, V], no copy
    except RuntimeError:
        flat = None
    if flat is not None:
        for start in range(0, batch * time, chunk_rows):
            yield start, min(start + chunk_rows, batch * time), flat[start:start + chunk_rows]
        return
    for b in range(batch):
        for t in range(0, time, chunk_rows):
            block = logits[b, t:t + chunk_rows]  # [C, V]
            yield b * time + t, b * time + t + block.shape[0], block


def scaled(block: Tensor, temperature: float) -> Tensor:
    """A [C, V] block of logits as compute-dtype z = logits / temperature."""
    z = block.to(compute_dtype(block.dtype))  # [C, V]
    return z / temperature if temperature != 1.0 else z
