"""Overlong completions: mask them out, or penalise length softly (DAPO).

A completion cut off at the generation limit has no final answer, so its reward says
nothing about the reasoning it contains. Two remedies from DAPO (Yu et al. 2025):
- overlong filtering: drop truncated completions from the loss (`mask_truncated`);
- soft overlong punishment (eq. 13): a length penalty added to the reward that ramps
  linearly from 0 to -1 over the last `cache_length` tokens before `max_length`.
"""

from __future__ import annotations

import torch
from torch import Tensor


def mask_truncated(mask: Tensor, truncated: Tensor) -> Tensor:
    """Zero the loss mask of truncated completions. mask [B, T], truncated [B] bool -> [B, T]."""
    if truncated.dim() != 1 or truncated.shape[0] != mask.shape[0]:
        raise ValueError(f"truncated must be [B] with B={mask.shape[0]}, got shape "
                         f"{tuple(truncated.shape)}")
    keep = (~truncated.bool()).to(mask.dtype)  # [B]
    return mask * keep[:, None]  # [B, T]


def soft_overlong_penalty(lengths: Tensor, max_length: int, cache_length: int) -> Tensor:
    """DAPO soft overlong punishment (Yu et al. 2025, eq. 13). lengths [B] -> penalty [B] float.

        L <= max_length - cache_length:               0
        max_length - cache_length < L <= max_length:  (max_length - cache_length - L) / cache_length
        L > max_length:                               -1

    Added to the reward. cache_length == 0 gives a hard step: 0 up to max_length, -1 beyond.
    """
    if max_length < 1 or not 0 <= cache_length <= max_length:
        raise ValueError(f"need max_length >= 1 and 0 <= cache_length <= max_length, got "
                         f"max_length={max_length}, cache_length={cache_length}")
    lengths = lengths.float()  # [B]
    start = max_length - cache_length
    ramp = (start - lengths) / max(cache_length, 1)  # [B]; unused when cache_length == 0
    penalty = torch.where(lengths <= start, torch.zeros_like(lengths), ramp)  # [B]
    return torch.where(lengths > max_length, torch.full_like(lengths, -1.0), penalty)  # [B]
