"""Verifiers by name.

Built-ins are listed as import paths and imported on first use, so asking for "math"
never imports the code sandbox and vice versa, and worker processes import only what
they grade. A user verifier is either registered at run time (`register`, this process
only) or a plugin: a "module:Class" the operator names in the run's config
(`reward.plugins`) or on the command line (`rlvr serve --plugin`, `rlvr verify
--plugin`), installed here with `add_plugins`. A plugin is known by that same
"module:Class" string, and only once the operator listed it: the pools hand their
plugin list to every worker process, which installs it before its first item.

Who chooses code: only the operator. Any other import path (one a data line, a dataset
row, an adapter's data_source or an HTTP request names) is refused by `spec_for`, so
data can pick among the verifiers the operator allowed but never name new code.
Each spec also lists its `request_options`: the options a request or a data line may
set (grading choices); every other option (where code runs, where files go, which
endpoint or secret) is the operator's alone (rlvr.verifiers.untrusted).
"""

from __future__ import annotations

import importlib
import json
import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping

from rlvr.verifiers.base import Verifier

# "package.module:attr": what `add_plugins` accepts (no spaces, no call syntax)
_IMPORT_PATH = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*")


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
    # Options a request or a data line may set: grading choices only. Anything else
    # (sandbox, cache_dir, base_url, api_key_env, model, ...) only the operator sets.
    request_options: frozenset[str] = frozenset()
    # Options whose value names other verifiers: option -> the verifier its value is the
    # options of, or "*" for a list of composite components ({"verifier", "options"}).
    nested_options: Mapping[str, str] = field(default_factory=dict)
    # The factory has a cheap `check_options(options)` (the code check's packages): known
    # here so that checking a request's options never imports a verifier that has none.
    checks_options: bool = False


def _safe(*names: str) -> frozenset[str]:
    return frozenset(names)


# name -> spec. Add a line here when a built-in verifier lands.
_BUILTINS: dict[str, VerifierSpec] = {
    "math": VerifierSpec("rlvr.verifiers.math.verifier:MathVerifier", 5.0,
                         "final-answer equivalence for math (boxed, ####, 'Answer:')",
                         request_options=_safe("fallback", "answer_form", "time_budget_s")),
    "math_verify": VerifierSpec("rlvr.verifiers.math_verify:MathVerifyVerifier", 5.0,
                                "math-verify's defaults: lenient (pays `6 * 75` for 450); "
                                "for comparisons and bench_hacking, not for training"),
    "exact": VerifierSpec("rlvr.verifiers.exact:ExactVerifier", 2.0,
                          "the final answer equals the reference string (numbers by value)",
                          request_options=_safe("case_sensitive")),
    "ifeval": VerifierSpec("rlvr.verifiers.ifeval:IfevalVerifier", 10.0,  # cold start loads models
                           "IFEval instruction constraints (+ rlvr:*); score = fraction followed",
                           request_options=_safe("loose", "unknown_language_follows",
                                                 "min_words", "degenerate")),
    "format": VerifierSpec("rlvr.verifiers.format:FormatVerifier", 2.0,
                           "<think>...</think><answer>...</answer> structure, one answer, nothing after",
                           request_options=_safe("think_tag", "answer_tag", "require_think",
                                                 "think_in_prompt")),
    "composite": VerifierSpec("rlvr.verifiers.composite:CompositeVerifier", 15.0,
                              "weighted, gated combination of verifiers (options: components)",
                              request_options=_safe("components", "reference_mode"),
                              nested_options={"components": "*"}),
    "r1_math": VerifierSpec("rlvr.verifiers.composite:r1_math", 7.0,
                            "composite: format gate, then math accuracy (DeepSeek-R1 style)",
                            request_options=_safe("format_options"),
                            nested_options={"format_options": "format"}),
    # packages: checked against what the grading host has installed (check_options);
    # timeout_s: per test, at most the verifier's own cap, and the item's limit kills first;
    # strict_numeric: how numpy comparisons in the tests treat shapes (grading only)
    "code": VerifierSpec("rlvr.verifiers.code:CodeVerifier", 60.0,
                         "program passes its tests in a bubblewrap sandbox (HumanEval/MBPP/io)",
                         request_options=_safe("packages", "timeout_s", "strict_numeric"),
                         checks_options=True),
    # 120 s: the judge's own deadline (options total_timeout_s, 100 s) answers first.
    # Every judge option is the operator's: endpoint, model, key, cache, cost.
    "judge": VerifierSpec("rlvr.verifiers.judge:JudgeVerifier", 120.0,
                          "rubric grading by an OpenAI-compatible chat model (options: "
                          "base_url, model)"),
    # 120 s in a worker: the first item loads the model
    "reward_model": VerifierSpec("rlvr.verifiers.reward_model:RewardModelVerifier", 120.0,
                                 "a Bradley-Terry reward model from `rlvr rm-train` scores "
                                 "the completion (options: model, normalization)",
                                 in_process=True, checks_options=True,
                                 request_options=_safe("normalization", "pass_threshold")),
}

_REGISTERED: dict[str, VerifierSpec] = {}
_PLUGINS: dict[str, VerifierSpec] = {}  # "module:Class" the operator listed -> spec
# Built verifiers by (name, options), least recently used first. Bounded, because a
# request or a data line may vary its grading options (a code check's timeout_s) and
# each distinct set would otherwise keep its own warm resources (a code verifier's
# sandbox zygote) for the life of the worker: one batch of 1,000 distinct limits would
# leave 1,000 sandboxes behind. An evicted verifier is closed.
_INSTANCES: OrderedDict[tuple[str, str], Verifier] = OrderedDict()
MAX_INSTANCES = 16


class UnknownVerifier(KeyError):
    """A verifier name this process does not accept; `args[0]` says why and what is known."""


def is_import_path(name: str) -> bool:
    """Whether `name` is written as code ("module:attr") rather than a verifier name."""
    return ":" in name


def register(name: str, factory: Callable[..., Verifier], timeout_s: float = 5.0,
             description: str = "", request_options: Iterable[str] = ()) -> None:
    """Register a verifier factory under `name` (in this process only)."""
    if name in _BUILTINS:
        raise ValueError(f"verifier name {name!r} is taken by a built-in")
    if is_import_path(name):
        raise ValueError(f"verifier name {name!r}: a registered name has no ':' (an import "
                         "path is a plugin: add_plugins)")
    _REGISTERED[name] = VerifierSpec(
        factory, timeout_s, description, request_options=frozenset(request_options),
        checks_options=callable(getattr(factory, "check_options", None)))


def add_plugins(paths: Iterable[str], where: str = "plugins") -> None:
    """Install the operator's plugins: each "module:Class" is imported now (an error
    names `where` and the entry) and is from then on a verifier name in this process.
    Only operator configuration may call this, never data: it imports code."""
    for index, path in enumerate(paths):
        if path in _PLUGINS:
            continue
        label = f"{where}[{index}]"
        if not isinstance(path, str) or not _IMPORT_PATH.fullmatch(path):
            raise ValueError(f"{label}: {path!r} is not a 'module:Class' import path")
        module_name, _, attr = path.partition(":")
        try:
            factory = getattr(importlib.import_module(module_name), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"{label}: cannot import {path!r}: {type(exc).__name__}: {exc}"
                             ) from None
        if not callable(factory):
            raise ValueError(f"{label}: {path!r} is not callable")
        _PLUGINS[path] = _plugin_spec(path, factory)


def _plugin_spec(path: str, factory: Any) -> VerifierSpec:
    """A plugin's spec; the plugin may declare, as class (or function) attributes,
    `default_timeout_s`, `in_process` and `request_options` (default: none)."""
    timeout_s = getattr(factory, "default_timeout_s", 5.0)
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) or timeout_s <= 0:
        raise ValueError(f"plugin {path!r}: default_timeout_s must be a positive number")
    return VerifierSpec(factory, float(timeout_s), f"plugin {path}",
                        in_process=bool(getattr(factory, "in_process", False)),
                        checks_options=callable(getattr(factory, "check_options", None)),
                        request_options=frozenset(getattr(factory, "request_options", ())))


def plugins() -> tuple[str, ...]:
    """The plugins installed in this process, in the order the operator listed them."""
    return tuple(_PLUGINS)


def available() -> dict[str, VerifierSpec]:
    """Every verifier name this process knows, built-ins first, then registered, plugins."""
    return {**_BUILTINS, **_REGISTERED, **_PLUGINS}


def spec_for(name: str) -> VerifierSpec:
    """The spec of an accepted name; UnknownVerifier (a KeyError) for any other, and
    for an import path the operator did not list."""
    for table in (_REGISTERED, _BUILTINS, _PLUGINS):
        if name in table:
            return table[name]
    known = ", ".join(sorted(available()))
    if isinstance(name, str) and is_import_path(name):
        raise UnknownVerifier(
            f"verifier {name!r} is an import path that is not a plugin of this process "
            "(only the operator names code: reward.plugins in the run's config, or "
            f"--plugin on rlvr serve / rlvr verify; known: {known})")
    raise UnknownVerifier(f"unknown verifier {name!r} (known: {known})")


def resolve_factory(target: str | Callable[..., Verifier]) -> Callable[..., Verifier]:
    """The callable a spec's target names (imported for a built-in's "module:attr"),
    not yet called. Only for a spec's target (from `spec_for`), never for a name."""
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
    if key in _INSTANCES:
        _INSTANCES.move_to_end(key)
        return _INSTANCES[key]
    verifier = _INSTANCES[key] = resolve_factory(spec_for(name).target)(**options)
    while len(_INSTANCES) > MAX_INSTANCES:
        _, evicted = _INSTANCES.popitem(last=False)
        close = getattr(evicted, "close", None)
        if callable(close):
            close()
    return verifier
