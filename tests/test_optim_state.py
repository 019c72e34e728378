"""allocate_state creates Adam(W)'s state as torch would at its first step: the steps
that follow give the same parameters, bit for bit, and the same state."""

from __future__ import annotations

import pytest
import torch

from rlvr.training.optim import allocate_state


def _params(seed: int) -> list[torch.nn.Parameter]:
    torch.manual_seed(seed)
    return [torch.nn.Parameter(torch.randn(5, 3)), torch.nn.Parameter(torch.randn(7))]


def _run(optimizer_of, eager: bool):
    params = _params(0)
    optimizer = optimizer_of(params)
    if eager:
        assert allocate_state(optimizer)
        assert not allocate_state(optimizer)  # only once, never over a state
    generator = torch.Generator().manual_seed(1)
    for _ in range(3):
        for p in params:
            p.grad = torch.randn(p.shape, generator=generator)
        optimizer.step()
    return params, optimizer.state_dict()["state"]


@pytest.mark.parametrize("optimizer_of", [
    lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1, fused=True),
    lambda ps: torch.optim.AdamW(ps, lr=1e-2, weight_decay=0.1),
    lambda ps: torch.optim.AdamW(ps, lr=1e-2, foreach=False),
    lambda ps: torch.optim.Adam(ps, lr=1e-2),
], ids=["adamw-fused", "adamw-foreach", "adamw-loop", "adam"])
def test_same_steps_as_torch_lazy_state(optimizer_of):
    lazy_params, lazy_state = _run(optimizer_of, eager=False)
    eager_params, eager_state = _run(optimizer_of, eager=True)
    for a, b in zip(lazy_params, eager_params):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    assert lazy_state.keys() == eager_state.keys()
    for index, entries in lazy_state.items():
        assert entries.keys() == eager_state[index].keys()
        for name, value in entries.items():
            other = eager_state[index][name]
            assert (value.dtype, value.device, value.shape) == (other.dtype, other.device,
                                                                other.shape), name
            torch.testing.assert_close(value, other, rtol=0, atol=0)


def test_other_optimizers_are_left_alone():
    sgd = torch.optim.SGD(_params(0), lr=0.1, momentum=0.9)
    assert not allocate_state(sgd) and not sgd.state
    amsgrad = torch.optim.AdamW(_params(0), lr=0.1, amsgrad=True)
    assert not allocate_state(amsgrad) and not amsgrad.state
