"""The "ifeval" verifier: IFEval's instruction-following checks as a reward.

Reference (exactly a row of IFEval's input_data.jsonl; extra fields such as "key" are
ignored, "prompt" is optional since no checker reads it):

    {"prompt": "...", "instruction_id_list": ["punctuation:no_comma", ...],
     "kwargs": [{}, {"num_words": 300, "relation": "at least"}, ...]}

"kwargs" may be left out when no instruction takes any. Score = fraction of the
instructions followed; passed = all followed (IFEval's instruction-level and
prompt-level accuracy). Strict mode (default) checks the response as written and
counts nothing as followed by an empty response. Loose mode (`loose=True`) follows
IFEval's loose evaluation: an instruction is followed when any of eight variants of
the response follows it (as is, without its first line, without its last line,
without both, and each of those with every '*' removed).

Guards (opt-in, `guard.py`): `min_words` and `degenerate="reject"` score 0 a response
that meets the checks without doing the task ("A A A A", one phrase repeated to a
length, "{}"). Off by default, so the verdicts stay IFEval's.
"""

from __future__ import annotations

from typing import Any

from rlvr.verifiers.base import InvalidReference, Verdict
from rlvr.verifiers.ifeval.guard import ResponseGuard
from rlvr.verifiers.ifeval.registry import InstructionSpec, parse_instruction

ParsedInstruction = tuple[InstructionSpec, dict[str, Any]]


def parse_reference(reference: Any) -> list[ParsedInstruction]:
    """Each instruction's spec and clean kwargs, or InvalidReference naming the field."""
    if not isinstance(reference, dict):
        raise InvalidReference(f"ifeval: reference must be an object with "
                               f"'instruction_id_list' and 'kwargs', got {type(reference).__name__}")
    ids = reference.get("instruction_id_list")
    if not isinstance(ids, (list, tuple)) or not ids:
        raise InvalidReference("ifeval: 'instruction_id_list' must be a non-empty list, "
                               f"got {ids!r}")
    kwargs = reference.get("kwargs")
    if kwargs is None:
        kwargs = [{}] * len(ids)
    if not isinstance(kwargs, (list, tuple)):
        raise InvalidReference(f"ifeval: 'kwargs' must be a list, got {type(kwargs).__name__}")
    if len(kwargs) != len(ids):
        raise InvalidReference(f"ifeval: 'instruction_id_list' has {len(ids)} entries but "
                               f"'kwargs' has {len(kwargs)} (they must align)")
    return [parse_instruction(i, k, f"kwargs[{n}]") for n, (i, k) in enumerate(zip(ids, kwargs))]


def loose_variants(response: str) -> list[str]:
    """IFEval's eight loose variants of a response, the response itself first."""
    lines = response.split("\n")
    trimmed = ["\n".join(lines[1:]).strip(), "\n".join(lines[:-1]).strip(),
               "\n".join(lines[1:-1]).strip()]
    return [response, response.replace("*", ""), *trimmed, *(t.replace("*", "") for t in trimmed)]


def follows(spec: InstructionSpec, kwargs: dict[str, Any], response: str, loose: bool,
            unknown_language_follows: bool = True) -> bool:
    if spec.uses_language:
        kwargs = {**kwargs, "unknown_follows": unknown_language_follows}
    variants = loose_variants(response) if loose else [response]
    return any(v.strip() and spec.check(v, **kwargs) for v in variants)


class IfevalVerifier:
    """loose: IFEval's loose evaluation (see the module docstring).
    unknown_language_follows: text langdetect cannot classify (only digits or
    punctuation) follows the language and English-case instructions, as in IFEval
    (default). Set False for training: otherwise "12345 !!!" satisfies "answer in
    Hindi", a reward a policy can learn to collect.
    min_words, degenerate: the opt-in guards of `guard.py` (defaults 0 and "allow":
    IFEval's semantics); for training, e.g. {"min_words": 5, "degenerate": "reject"}."""

    name = "ifeval"

    def __init__(self, loose: bool = False, unknown_language_follows: bool = True,
                 min_words: int = 0, degenerate: str = "allow") -> None:
        self.loose = loose
        self.unknown_language_follows = unknown_language_follows
        self.guard = ResponseGuard(min_words, degenerate)

    def check_reference(self, reference: Any) -> None:
        parse_reference(reference)

    def verify(self, completion: str, reference: Any) -> Verdict:
        instructions = parse_reference(reference)
        followed = [follows(spec, kwargs, completion, self.loose, self.unknown_language_follows)
                    for spec, kwargs in instructions]
        score = sum(followed) / len(followed)
        passed = all(followed)
        if passed:
            reason = "all_followed"
        elif not completion.strip():
            reason = "empty_response"
        else:
            reason = "not_followed"
        details = {"mode": "loose" if self.loose else "strict",
                   "instructions": [{"id": spec.id, "followed": ok}
                                    for (spec, _), ok in zip(instructions, followed)]}
        problem = self.guard.problem(completion, instructions) if self.guard.active else None
        if problem is not None:  # the checks' own verdicts stay in the details
            details["guard"] = problem[1]
            return Verdict(0.0, False, problem[0], details)
        return Verdict(score, passed, reason, details)
