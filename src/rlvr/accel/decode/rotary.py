"""Rotary position embeddings in transformers' Llama half-split convention, in the form
rlvr's own forwards use: x * cos + rotate_half(x) * sin with rotate_half(x) =
cat(-x2, x1), written as x * cos + swap_halves(x) * signed_sin(sin) (one pass fewer),
and its transpose for hand-written backwards."""

from __future__ import annotations

import torch


def signed_sin(sin: torch.Tensor) -> torch.Tensor:
    """sin [.., D] with its first half negated: rotate_half(x) * sin equals
    swap_halves(x) * signed_sin(sin)."""
    half = sin.shape[-1] // 2
    return torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)


def swap_halves(x: torch.Tensor) -> torch.Tensor:
    """cat(x2, x1) of x [.., D] = [x1, x2], as a new contiguous tensor (one flip)."""
    half = x.shape[-1] // 2
    return x.unflatten(-1, (2, half)).flip(-2).flatten(-2)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embedding on x [.., heads, D] with cos and signed sin broadcastable to it
    (`signed_sin`)."""
    return (x * cos).addcmul_(swap_halves(x), sin)


def rotate_backward(grad: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """The gradient of `rotate` with respect to x, given its output's gradient: rotate is
    y = x * cos + P(x) * sin with P the half swap (a symmetric permutation, P = P^T), so
    dx = dy * cos + P(dy * sin)."""
    return (grad * cos).add_(swap_halves(grad * sin))
