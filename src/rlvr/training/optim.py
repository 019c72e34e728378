"""AdamW and the learning-rate schedule (linear warmup, then constant/cosine/linear decay)."""

from __future__ import annotations

import math
from typing import Any

import torch


def build_optimizer(model: Any, lr: float, weight_decay: float,
                    betas: tuple[float, float]) -> torch.optim.AdamW:
    params = [p for p in model.parameters() if p.requires_grad]
    # The fused kernel (CPU and CUDA) does the whole update in one pass over the weights:
    # ~5x faster than the default for a 135M model on CPU, same arithmetic.
    fused = all(p.device.type in ("cpu", "cuda") and p.is_floating_point() for p in params)
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, betas=tuple(betas),
                             fused=fused or None)


def allocate_state(optimizer: torch.optim.Optimizer) -> bool:
    """Create Adam(W)'s per-parameter state now (step 0, zero moments: what torch creates
    at the first step), for an optimizer that has none yet. Returns whether it did.

    Why: created lazily, the moments (2x the trainable parameters) are allocated in the
    middle of the first update, above that step's temporaries, and the following steps
    fault in fresh pages around them: on SmolLM2-135M (2-core CPU, glibc heap retained)
    ~100k page faults and ~1 s more in RL step 2 (3.6-4.0 s vs 2.6-2.7 s). Allocated
    before the first step they sit below everything a step frees and reuses.
    Only for torch's Adam/AdamW without amsgrad or capturable (any other optimizer is
    left to create its own state); tests compare the steps with torch's own state."""
    if type(optimizer) not in (torch.optim.Adam, torch.optim.AdamW) or optimizer.state:
        return False
    if any(g.get("amsgrad") or g.get("capturable") for g in optimizer.param_groups):
        return False
    for group in optimizer.param_groups:
        for p in group["params"]:
            if not p.requires_grad:
                continue
            # torch keeps the step on the parameter's device for the fused kernel, on the
            # CPU otherwise; float32 either way.
            device = p.device if group.get("fused") else torch.device("cpu")
            optimizer.state[p] = {
                "step": torch.zeros((), dtype=torch.float32, device=device),
                "exp_avg": torch.zeros_like(p, memory_format=torch.preserve_format),
                "exp_avg_sq": torch.zeros_like(p, memory_format=torch.preserve_format)}
    return True


def release_gradients(optimizer: torch.optim.Optimizer) -> None:
    """Free the gradients once the optimizer has used them (its step is taken). Left in
    `.grad` until the next step's zero_grad, they (as large as the trainable weights:
    0.54 GB for SmolLM2-135M) sat through the next sampling, held-out evaluation and
    checkpoint, under the peaks those reach (benchmarks/tools/profile_learning.py)."""
    optimizer.zero_grad(set_to_none=True)


class WarmupDecay:
    """lr multiplier at optimizer step s: linear warmup over `warmup` steps (from 1/warmup),
    then `kind` decay to `min_ratio` at `total` steps. A class, not a closure, so the
    scheduler's state_dict round-trips."""

    def __init__(self, warmup: int, total: int, kind: str = "constant",
                 min_ratio: float = 0.0) -> None:
        self.warmup, self.total, self.kind, self.min_ratio = warmup, max(total, 1), kind, min_ratio

    def __call__(self, step: int) -> float:
        if step < self.warmup:
            return (step + 1) / self.warmup
        if self.kind == "constant":
            return 1.0
        progress = min(1.0, (step - self.warmup) / max(1, self.total - self.warmup))
        if self.kind == "cosine":
            shape = 0.5 * (1.0 + math.cos(math.pi * progress))
        elif self.kind == "linear":
            shape = 1.0 - progress
        else:
            raise ValueError(f"unknown schedule {self.kind!r} (constant, cosine, linear)")
        return self.min_ratio + (1.0 - self.min_ratio) * shape


def build_scheduler(optimizer: torch.optim.Optimizer, warmup: int, total: int, kind: str,
                    min_ratio: float) -> torch.optim.lr_scheduler.LambdaLR:
    return torch.optim.lr_scheduler.LambdaLR(optimizer, WarmupDecay(warmup, total, kind,
                                                                    min_ratio))
