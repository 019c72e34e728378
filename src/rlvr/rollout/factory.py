"""Rollout engines by name (`sampling.engine`), each with its declared capabilities.

The trainer builds its engine here and reads, before building anything, what the named
engine declares (`declared_capabilities`): whether it can keep activations and whether
its log-probs are the trainer's numbers, from which the defaults follow (pi_old is
recomputed for an engine whose log-probs are not the trainer's). Engine modules are
imported only when named, so a config can be checked without loading torch kernels.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from rlvr.rollout.base import EngineCapabilities, RolloutEngine

# name -> "module:Class"; the class has CAPABILITIES (what it can do at best) and a
# constructor (model, tokenizer, **EngineOptions fields).
ENGINES: dict[str, str] = {"hf": "rlvr.rollout.hf:HFRolloutEngine",
                           "vllm": "rlvr.rollout.vllm.engine:VLLMEngine"}


@dataclass(frozen=True)
class EngineOptions:
    """The engine settings of the trainer's config (sampling.*)."""
    max_batch_rows: int = 512
    fast_decode: bool = True
    activation_budget_gb: float = 2.0
    vllm: Any = None  # engine=vllm: VLLMSettings or its fields as a dict (sampling.vllm)
    reuse_prefix: bool = True  # an episode's turns continue the last turn's keys/values
    prefix_budget_gb: float = 2.0


def register_engine(name: str, target: str) -> None:
    """Name an engine class ("module:Class") for `sampling.engine`."""
    ENGINES[name] = target


def engine_names() -> list[str]:
    return sorted(ENGINES)


def engine_class(name: str) -> type:
    if name not in ENGINES:
        raise ValueError(f"unknown engine {name!r} (known: {', '.join(engine_names())})")
    module, _, attribute = ENGINES[name].partition(":")
    return getattr(importlib.import_module(module), attribute)


def declared_capabilities(name: str) -> EngineCapabilities:
    """What engine `name` declares it can do at best (any model)."""
    return engine_class(name).CAPABILITIES


def build_engine(name: str, model: Any, tokenizer: Any,
                 options: EngineOptions = EngineOptions()) -> RolloutEngine:
    """An engine class with `from_options` reads what it needs from `options`; others
    take the in-process decode settings as keyword arguments."""
    cls = engine_class(name)
    if hasattr(cls, "from_options"):
        return cls.from_options(model, tokenizer, options)
    return cls(model, tokenizer, max_batch_rows=options.max_batch_rows,
               fast_decode=options.fast_decode,
               activation_budget_gb=options.activation_budget_gb,
               reuse_prefix=options.reuse_prefix, prefix_budget_gb=options.prefix_budget_gb)
