"""rlvr.accel.decode.rotary: the rotation equals transformers' apply_rotary_pos_emb, and the
hand-written transpose equals autograd's gradient of it."""

from __future__ import annotations

import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from rlvr.accel.decode.rotary import rotate, rotate_backward, signed_sin


def _tables(rows: int, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
    angles = torch.rand(rows, 1, dim // 2, dtype=torch.float64) * 6.0  # [N, 1, D/2]
    angles = torch.cat([angles, angles], -1)  # transformers' layout: cat(freqs, freqs)
    return angles.cos(), angles.sin()  # [N, 1, D] each


def test_rotate_equals_transformers():
    cos, sin = _tables(5, 8)
    x = torch.randn(5, 3, 8, dtype=torch.float64)  # [N, heads, D]
    # transformers takes [b, heads, s, D] with cos/sin [b, s, D] (unsqueezed at dim 1).
    expected, _ = apply_rotary_pos_emb(x.transpose(0, 1)[None], x.transpose(0, 1)[None],
                                       cos[:, 0][None], sin[:, 0][None])
    torch.testing.assert_close(rotate(x, cos, signed_sin(sin)),
                               expected[0].transpose(0, 1), rtol=0, atol=1e-12)


def test_rotate_backward_is_the_gradient():
    cos, sin = _tables(4, 6)
    # Unequal halves too: rotate_backward must not assume sin's halves match.
    sin = sin * torch.linspace(0.5, 1.5, 6, dtype=torch.float64)
    x = torch.randn(4, 2, 6, dtype=torch.float64, requires_grad=True)
    grad = torch.randn(4, 2, 6, dtype=torch.float64)
    (expected,) = torch.autograd.grad(rotate(x, cos, signed_sin(sin)), x, grad)
    torch.testing.assert_close(rotate_backward(grad, cos, signed_sin(sin)), expected,
                               rtol=0, atol=1e-12)
