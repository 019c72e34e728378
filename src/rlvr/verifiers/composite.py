"""The "composite" verifier: a weighted, gated combination of other verifiers.

Configured by options (so it works in `VerifierPool` workers, which receive options):

    {"components": [
        {"verifier": "format", "weight": 0.1, "gate": true},
        {"verifier": "math", "weight": 1.0, "options": {}}]}

Each component:
  verifier: the child verifier's name: a built-in, a registered name or an operator's
            plugin ("module:Class" listed in reward.plugins / --plugin); never other code.
  weight:   >= 0; the score is the weighted mean of the components' scores
            (sum w_i s_i / sum w_i). A weight of 0 keeps a component for logging only.
  gate:     when true, the component must pass or the whole score is 0 ("format must
            pass before accuracy counts"); a gate still adds its weight when it passes.
  options:  the child verifier's options.
  name:     label in the details (default: the verifier name; must be unique).
  extract_tag: when set (e.g. "answer"), the child sees only the content of the last
            <tag>...</tag> block of the completion ("" when there is none), so an
            accuracy check cannot be satisfied by text in the reasoning.

Reference: either shared (every child gets the same reference, e.g. a math answer,
which "format" ignores), or per component: an object whose keys are all component
names, e.g. {"math": "\\frac12", "format": null}; a component missing from it gets
null. `reference_mode` = "auto" (default: per-component when the reference is an
object keyed only by component names), "shared" or "per_component" forces one.

Verdict: passed = every component passed; details["components"] holds each
component's score, passed and reason, so training can log them; details["gated_by"]
names the failing gate, if any. All children run in the calling process (in a pool
worker, one item: the pool's time limit covers the whole composite).

Named composites: `register_composite(name, components)` makes a name usable in this
process (e.g. a training config's `verifier: my_combo`); to use a named composite in
pool workers, list a factory as a plugin (`reward.plugins: ["my_pkg.rewards:my_combo"]`,
then named by that string) or use a built-in such as "r1_math" (format gate + math),
registered in registry._BUILTINS.

Options from a request or a data line: "components" and "reference_mode" only, and each
component's own verifier and options pass the same rules (rlvr.verifiers.untrusted).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

from rlvr.verifiers.base import InvalidReference, Verdict, run_verifier
from rlvr.verifiers.registry import get_verifier, register, spec_for

REFERENCE_MODES = ("auto", "shared", "per_component")


@dataclass(frozen=True)
class Component:
    """One child of a composite (fields as documented in the module docstring)."""

    verifier: str
    weight: float = 1.0
    gate: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    name: str = ""
    extract_tag: str | None = None

    @classmethod
    def parse(cls, raw: Any, index: int) -> "Component":
        where = f"composite: components[{index}]"
        if isinstance(raw, Component):
            return raw
        if not isinstance(raw, dict) or not isinstance(raw.get("verifier"), str):
            raise ValueError(f"{where} must be an object with a 'verifier' name, got {raw!r}")
        unknown = set(raw) - {"verifier", "weight", "gate", "options", "name", "extract_tag"}
        if unknown:
            raise ValueError(f"{where}: unknown field(s) {sorted(unknown)}")
        weight = raw.get("weight", 1.0)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight >= 0:
            raise ValueError(f"{where}.weight must be a number >= 0, got {weight!r}")
        if not isinstance(raw.get("gate", False), bool):
            raise ValueError(f"{where}.gate must be true or false")
        if not isinstance(raw.get("options", {}), dict):
            raise ValueError(f"{where}.options must be an object")
        tag = raw.get("extract_tag")
        if tag is not None and not (isinstance(tag, str) and re.fullmatch(r"[A-Za-z_][\w.-]*", tag)):
            raise ValueError(f"{where}.extract_tag must be a tag name, got {tag!r}")
        spec_for(raw["verifier"])  # unknown verifier name: KeyError with the known names
        return cls(raw["verifier"], float(weight), raw.get("gate", False),
                   dict(raw.get("options", {})), raw.get("name") or raw["verifier"], tag)

    def input_text(self, completion: str) -> str:
        if self.extract_tag is None:
            return completion
        tag = re.escape(self.extract_tag)
        blocks = re.findall(rf"<{tag}\s*>(.*?)</{tag}\s*>", completion, flags=re.DOTALL)
        return blocks[-1].strip() if blocks else ""


class CompositeVerifier:
    name = "composite"
    uses_prompt = True  # handed on to the components that use it

    def __init__(self, components: list[Any], reference_mode: str = "auto") -> None:
        if not isinstance(components, (list, tuple)) or not components:
            raise ValueError("composite: 'components' must be a non-empty list")
        self.components = [Component.parse(c, i) for i, c in enumerate(components)]
        names = [c.name for c in self.components]
        if len(set(names)) != len(names):
            raise ValueError(f"composite: component names must be unique, got {names} "
                             "(give duplicates a 'name')")
        if sum(c.weight for c in self.components) <= 0:
            raise ValueError("composite: at least one component needs a weight > 0")
        if reference_mode not in REFERENCE_MODES:
            raise ValueError(f"composite: reference_mode must be one of {REFERENCE_MODES}")
        self.reference_mode = reference_mode

    def _split_reference(self, reference: Any) -> dict[str, Any]:
        names = {c.name for c in self.components}
        keyed = isinstance(reference, dict) and reference and set(reference) <= names
        if self.reference_mode == "per_component" or (self.reference_mode == "auto" and keyed):
            if not isinstance(reference, dict):
                raise InvalidReference("composite: reference_mode 'per_component' needs an "
                                       f"object keyed by component names {sorted(names)}")
            unknown = set(reference) - names
            if unknown:
                raise InvalidReference(f"composite: reference has key(s) {sorted(unknown)} "
                                       f"that name no component ({sorted(names)})")
            return {c.name: reference.get(c.name) for c in self.components}
        return {c.name: reference for c in self.components}

    def _child(self, component: Component):
        return get_verifier(component.verifier, **component.options)

    def check_reference(self, reference: Any) -> None:
        for component, ref in zip(self.components, self._split_reference(reference).values()):
            try:
                self._child(component).check_reference(ref)
            except InvalidReference as exc:
                raise InvalidReference(f"composite component {component.name!r}: {exc}") from None

    def verify(self, completion: str, reference: Any, prompt: str | None = None) -> Verdict:
        references = self._split_reference(reference)
        results: dict[str, Verdict] = {}
        for component in self.components:
            try:
                results[component.name] = run_verifier(
                    self._child(component), component.input_text(completion),
                    references[component.name], prompt)
            except InvalidReference as exc:
                raise InvalidReference(f"composite component {component.name!r}: {exc}") from None
        details: dict[str, Any] = {"components": {
            name: {"score": v.score, "passed": v.passed, "reason": v.reason}
            for name, v in results.items()}}
        failed_gates = [c.name for c in self.components if c.gate and not results[c.name].passed]
        passed = all(v.passed for v in results.values())
        if failed_gates:
            details["gated_by"] = failed_gates
            return Verdict(0.0, False, f"gate_failed:{failed_gates[0]}", details)
        total = sum(c.weight for c in self.components)
        score = sum(c.weight * results[c.name].score for c in self.components) / total
        return Verdict(min(1.0, max(0.0, score)), passed, "all_passed" if passed else "partial",
                       details)


def register_composite(name: str, components: list[Any], timeout_s: float | None = None,
                       description: str = "", reference_mode: str = "auto") -> None:
    """Register a named composite in this process. Its time limit defaults to the sum
    of its children's limits, since they run one after another in one process."""
    CompositeVerifier(components, reference_mode)  # validate now, not at first use
    if timeout_s is None:
        timeout_s = sum(spec_for(Component.parse(c, i).verifier).timeout_s
                        for i, c in enumerate(components))
    register(name, functools.partial(CompositeVerifier, components, reference_mode),
             timeout_s, description or f"composite of {[Component.parse(c, i).name for i, c in enumerate(components)]}")


# DeepSeek-R1's recipe: the format must hold before accuracy counts, and a well-formed
# correct answer scores 1.0. "math" grades only the answer block's content.
R1_MATH_COMPONENTS = [{"verifier": "format", "weight": 0.0, "gate": True},
                      {"verifier": "math", "weight": 1.0, "extract_tag": "answer"}]


def r1_math(**options: Any) -> CompositeVerifier:
    """The built-in "r1_math" composite; `format_options` go to the format component."""
    format_options = options.pop("format_options", {})
    if options:
        raise ValueError(f"r1_math: unknown option(s) {sorted(options)}")
    answer_tag = format_options.get("answer_tag", "answer")
    components = [dict(R1_MATH_COMPONENTS[0], options=format_options),
                  dict(R1_MATH_COMPONENTS[1], extract_tag=answer_tag)]
    return CompositeVerifier(components)
