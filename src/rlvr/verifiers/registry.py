"""Verifiers by name.

Built-ins are listed as import paths and imported on first use, so asking for "math"
never imports the code sandbox and vice versa, and worker processes import only what
they grade. A user verifier is either registered at run time (`register`) or named by
its import path ("my_pkg.rewards:MyVerifier"), which also works inside worker
processes that never saw the `register` call.
"""

from __future__ import annotations

import importlib
import json
from dataclasses import dataclass
from typing import Any, Callable

from rlvr.verifiers.base import Verifier


@dataclass(frozen=True)
class VerifierSpec:
    """How to build a verifier, and the wall-clock limit one check gets by default."""

    target: str | Callable[..., Verifier]  # "module:attr" or a factory
    timeout_s: float = 5.0
    description: str = ""
    # Scored in the calling process, in batches, through `verify_batch(completions,
    # prompts)` instead of one item per worker process: a model scorer (reward_model),
    # whose weights should be loaded once, on the trainer's device (rlvr.training.rewards).
    in_process: bool = False


# name -> spec. Add a line here when a built-in verifier lands.
_BUILTINS: dict[str, VerifierSpec] = {
    "math": VerifierSpec("rlvr.verifiers.math.verifier:MathVerifier", 5.0,
                         "final-answer equivalence for math (boxed, ####, 'Answer:')"),
    "math_verify": VerifierSpec("rlvr.verifiers.math_verify:MathVerifyVerifier", 5.0,
                                "math-verify's defaults: lenient (pays `6 * 75` for 450); "
                                "for comparisons and bench_hacking, not for training"),
    "exact": VerifierSpec("rlvr.verifiers.exact:ExactVerifier", 2.0,
                          "the final answer equals the reference string (numbers by value)"),
    "ifeval": VerifierSpec("rlvr.verifiers.ifeval:IfevalVerifier", 10.0,  # cold start loads models
                           "IFEval instruction constraints (+ rlvr:*); score = fraction followed"),
    "format": VerifierSpec("rlvr.verifiers.format:FormatVerifier", 2.0,
                           "<think>...</think><answer>...</answer> structure, one answer, nothing after"),
    "composite": VerifierSpec("rlvr.verifiers.composite:CompositeVerifier", 15.0,
                              "weighted, gated combination of verifiers (options: components)"),
    "r1_math": VerifierSpec("rlvr.verifiers.composite:r1_math", 7.0,
                            "composite: format gate, then math accuracy (DeepSeek-R1 style)"),
    "code": VerifierSpec("rlvr.verifiers.code:CodeVerifier", 60.0,
                         "program passes its tests in a bubblewrap sandbox (HumanEval/MBPP/io)"),
    # 120 s: the judge's own deadline (options total_timeout_s, 100 s) answers first
    "judge": VerifierSpec("rlvr.verifiers.judge:JudgeVerifier", 120.0,
                          "rubric grading by an OpenAI-compatible chat model (options: "
                          "base_url, model)"),
    # 120 s in a worker: the first item loads the model
    "reward_model": VerifierSpec("rlvr.verifiers.reward_model:RewardModelVerifier", 120.0,
                                 "a Bradley-Terry reward model from `rlvr rm-train` scores "
                                 "the completion (options: model, normalization)",
                                 in_process=True),
}

_REGISTERED: dict[str, VerifierSpec] = {}
_INSTANCES: dict[tuple[str, str], Verifier] = {}


def register(name: str, factory: Callable[..., Verifier], timeout_s: float = 5.0,
             description: str = "") -> None:
    """Register a verifier factory under `name` (in this process only)."""
    if name in _BUILTINS:
        raise ValueError(f"verifier name {name!r} is taken by a built-in")
    _REGISTERED[name] = VerifierSpec(factory, timeout_s, description)


def available() -> dict[str, VerifierSpec]:
    """Every verifier name this process knows, built-ins first."""
    return {**_BUILTINS, **_REGISTERED}


def spec_for(name: str) -> VerifierSpec:
    if name in _REGISTERED:
        return _REGISTERED[name]
    if name in _BUILTINS:
        return _BUILTINS[name]
    if ":" in name:  # an import path names its own verifier
        return VerifierSpec(name)
    known = ", ".join(sorted(available()))
    raise KeyError(f"unknown verifier {name!r} (known: {known}; or give 'module:Class')")


def resolve_factory(target: str | Callable[..., Verifier]) -> Callable[..., Verifier]:
    """The callable a spec's target names (imported for "module:attr"), not yet called."""
    if callable(target):
        return target
    module_name, _, attr = target.partition(":")
    return getattr(importlib.import_module(module_name), attr)


def check_options(name: str, options: dict[str, Any]) -> None:
    """Refuse `options` for verifier `name` before anything is graded, where the
    verifier can tell cheaply (a class method `check_options(options)`: the code
    verifier checks that its packages are installed). ValueError naming the option.
    A name this process does not know (yet) is left to the pool, which names it."""
    if name not in available():
        return
    factory = resolve_factory(spec_for(name).target)
    check = getattr(factory, "check_options", None)
    if callable(check):
        check(dict(options))


def get_verifier(name: str, **options: Any) -> Verifier:
    """The verifier called `name`, built with `options`; instances are cached per
    (name, options) since some hold warm resources (parsers, sandboxes)."""
    key = (name, json.dumps(options, sort_keys=True, default=str))
    if key not in _INSTANCES:
        _INSTANCES[key] = resolve_factory(spec_for(name).target)(**options)
    return _INSTANCES[key]
