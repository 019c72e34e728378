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
