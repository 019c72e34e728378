"""clip_gradients: the same norm and gradients as torch's clip_grad_norm_, above and
below the limit."""

from __future__ import annotations

import pytest
import torch

from rlvr.training.loop import clip_gradients


def _with_grads(scale: float) -> torch.nn.Module:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))
    model[0].bias.requires_grad_(False)  # a parameter without a gradient is skipped
    (scale * model(torch.randn(4, 5)).square().sum()).backward()
    return model


@pytest.mark.parametrize("clip", [0.0, 1e-3, 1e6])
def test_matches_clip_grad_norm(clip):
    ours = _with_grads(3.0)
    theirs = _with_grads(3.0)  # the same model and gradients (seeded)
    norm = clip_gradients(ours, clip)
    expected = torch.nn.utils.clip_grad_norm_(theirs.parameters(),
                                              clip if clip > 0 else float("inf"))
    assert float(norm) == pytest.approx(float(expected), rel=1e-6)
    for a, b in zip(ours.parameters(), theirs.parameters()):
        if a.grad is None:
            assert b.grad is None
            continue
        torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=0)
    total = torch.sqrt(sum(p.grad.square().sum() for p in ours.parameters()
                           if p.grad is not None))
    if clip == 1e-3:  # clipped: the new total norm is the limit
        assert float(total) == pytest.approx(1e-3, rel=1e-4)
    else:
        assert float(total) == pytest.approx(float(norm), rel=1e-6)
