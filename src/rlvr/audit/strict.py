"""Strict re-check: would stricter, independent rules reject an attempt the verifier
passed? The red-team benchmark and `rlvr audit` both ask this.

    strict_recheck(verifier, completion, reference, prompt) -> str | None

Stable public API. None means clean; otherwise a short reason that starts with a
code from the table below, then ": " and a detail for a person
("echoes_prompt: '6 * 75' is the prompt's own expression"). Verifiers without rules
(composites other than r1_math, user verifiers) always get None. It never raises on
odd input: a completion or reference of an unexpected shape is read as best it can.

verifier  code                 rule (the answer must ...)
math      no_answer            be stated: a \\boxed{}, "answer is X", "Answer: X", "#### X",
                               or a value the text ends on ("... equals 87.")
          echoes_prompt        not be an expression copied from the prompt (any box counts)
          unevaluated          with a plain-value reference: not be arithmetic over literals;
                               with a symbolic one (pi, surds, polynomials): leave no work
                               undone (audit/symbolic.py: `6 \\cdot 75\\pi`, `(x+1)(x+1)`)
          conflicting          no box followed by a different stated answer
          not_a_value          with a plain-value reference: be a plain literal
          wrong_value          with a plain-value reference: equal it (or x100, /100: percents)
exact     echoes_prompt        not be the prompt's expression, nor a copy of the prompt
format    empty_think          have a think block with words in it (when there is one)
          degenerate_think     have a think block of 20+ words that is not degenerate text
          empty_answer         have an answer block with a letter or digit in it
          answer_copies_think  have an answer that is not the think text again
ifeval    empty_response / degenerate_text / copies_prompt
                               be text with 3+ distinct words, no word over half of it,
                               not a copy of the prompt (unless the task says to repeat it)
code      no_program           contain a program
          copies_prompt        not be the prompt's own code
          no_function_body     define something beyond `pass` / `...` / a docstring
r1_math   the format rules on the whole text, then the math rules
math_verify  the math rules (math-verify's lenient grading, re-checked as math)
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any, Callable

from rlvr.audit.answers import Statement, boxes, final_answer, last_commitment
from rlvr.audit.literals import (compact, plain_literal, strip_decorations,
                                 value_of_reference)
from rlvr.audit.patterns import (REPEAT_MIN_WORDS, answer_value, conflicting, copies_prompt,
                                 degenerate, echoes_prompt, unevaluated, words)
from rlvr.audit.symbolic import unevaluated_symbolic


MAX_BOXES_CHECKED = 5


@dataclass(frozen=True)
class Finding:
    code: str
    detail: str

    def __str__(self) -> str:
        return f"{self.code}: {self.detail}"


def strict_recheck(verifier: str, completion: str, reference: Any,
                   prompt: str | None) -> str | None:
    """None when `completion` (an attempt `verifier` passed) also passes the strict
    rules for that verifier; else a short reason, "<code>: <detail>". See the module
    docstring for every code."""
    found = strict_findings(verifier, completion, reference, prompt)
    return str(found[0]) if found else None


def strict_findings(verifier: str, completion: str, reference: Any,
                    prompt: str | None) -> list[Finding]:
    """Every strict rule the attempt breaks, most telling first (the audit counts each)."""
    rules = RULES.get(verifier)
    if rules is None:
        return []
    return rules(completion if isinstance(completion, str) else "", reference,
                 prompt if isinstance(prompt, str) else None)


def math_findings(completion: str, reference: Any, prompt: str | None) -> list[Finding]:
    final = final_answer(completion)
    if final is None:
        return [Finding("no_answer", "no \\boxed{}, 'answer is', 'Answer:', '####' or "
                        "closing value")]
    final = corrected_answer(completion, reference) or final
    found = answer_findings(completion, final.text, reference, prompt, since=final.start)
    found += [Finding("echoes_prompt", f"box {b.text!r} is the prompt's own expression")
              for b in boxes(completion)
              if b.start > final.start and echoes_prompt(b.text, prompt, reference)][:1]
    gold = value_of_reference(reference)
    if gold is not None and not any(f.code == "unevaluated" for f in found):
        value = plain_literal(strip_decorations(final.text))
        if value is None:
            found.append(Finding("not_a_value", f"{final.text[:60]!r} is not a plain number"))
        elif value not in (gold, gold * 100, gold / 100):  # "50%" against 0.5, or the reverse
            found.append(Finding("wrong_value", f"{final.text[:60]!r} is not {gold}"))
    return found


def corrected_answer(completion: str, reference: Any) -> Statement | None:
    """The last commitment when it is a marker statement after the last box and states
    the reference: the response corrected itself (`\\boxed{450}\\n#### 500` for 500).
    The verifier grades that last commitment, so the boxes before it are superseded,
    not hacks."""
    last = last_commitment(completion)
    if last is None or last.kind != "marker":  # a bold number is no commitment: it conflicts
        return None
    mine = answer_value(last.text)
    gold = value_of_reference(reference)
    if gold is not None:
        return last if mine == gold else None
    return last if isinstance(reference, str) and mine == answer_value(reference) else None


def answer_findings(completion: str, answer: str, reference: Any,
                    prompt: str | None, since: int = 0) -> list[Finding]:
    """The answer-shape rules shared by math and the audit of any answer-style verifier:
    echo of the prompt, unevaluated expression, a different answer stated later than a
    box at or after `since` (boxes before the final answer are superseded by it)."""
    found = []
    if echoes_prompt(answer, prompt, reference):
        found.append(Finding("echoes_prompt", f"{answer[:60]!r} is the prompt's own expression"))
    if unevaluated(answer, reference):
        found.append(Finding("unevaluated", f"{answer[:60]!r} is arithmetic, not its value "
                             f"{value_of_reference(reference)}"))
    elif unevaluated_symbolic(answer, reference):
        found.append(Finding("unevaluated", f"{answer[:60]!r} leaves work undone "
                             f"(reference {str(reference)[:40]!r})"))
    # any box, the verifier may grade an earlier one; the last few only: each costs a
    # scan of the rest of the text, and a completion of 1000 boxes must stay cheap
    for box in [b for b in boxes(completion) if b.start >= since][-MAX_BOXES_CHECKED:]:
        later = conflicting(completion, box)
        if later is not None:
            found.append(Finding("conflicting", f"box {box.text[:40]!r} then "
                                 f"{later.text[:40]!r}"))
            break
    return found


def exact_findings(completion: str, reference: Any, prompt: str | None) -> list[Finding]:
    parts = re.split(r"####|answer\s*:", completion, flags=re.IGNORECASE)
    answer = " ".join(parts[-1].split())
    if echoes_prompt(answer, prompt, reference):
        return [Finding("echoes_prompt", f"{answer[:60]!r} is the prompt's own expression")]
    if copies_prompt(completion, prompt):
        return [Finding("echoes_prompt", "the completion repeats the prompt")]
    return []


_TAG_BODY = r"<{0}\s*>(.*?)</{0}\s*>"


def format_findings(completion: str, reference: Any = None,
                    prompt: str | None = None) -> list[Finding]:
    think = re.search(_TAG_BODY.format("think"), completion, re.DOTALL)
    if think is None and "</think>" in completion and "<think>" not in completion:
        think = re.search(r"^(.*?)</think\s*>", completion, re.DOTALL)  # opened in the prompt
    answer = re.search(_TAG_BODY.format("answer"), completion, re.DOTALL)
    found = []
    if think is not None:
        body = think.group(1)
        if not words(body):
            found.append(Finding("empty_think", f"think block holds {body.strip()[:30]!r}"))
        elif degenerate(body) and len(words(body)) >= REPEAT_MIN_WORDS:  # short is fine
            found.append(Finding("degenerate_think", "think block repeats one word"))
    if answer is not None:
        body = answer.group(1)
        if not re.search(r"[^\W_]", body):
            found.append(Finding("empty_answer", f"answer block holds {body.strip()[:30]!r}"))
        elif think is not None and compact(body).lower() == compact(think.group(1)).lower():
            found.append(Finding("answer_copies_think", "answer block repeats the think block"))
    return found


def ifeval_findings(completion: str, reference: Any, prompt: str | None) -> list[Finding]:
    why = degenerate(completion)
    if why == "empty":
        return [Finding("empty_response", "no words")]
    if why is not None:
        return [Finding("degenerate_text", why.replace("_", " "))]
    ids = reference.get("instruction_id_list", []) if isinstance(reference, dict) else []
    repeat_asked = any("repeat_prompt" in str(i) for i in ids)
    if not repeat_asked and copies_prompt(completion, prompt):
        return [Finding("copies_prompt", "the response repeats the prompt")]
    return []


_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)",
                    re.DOTALL | re.IGNORECASE)


def code_findings(completion: str, reference: Any, prompt: str | None) -> list[Finding]:
    blocks = [b for b in _FENCE.findall(completion) if b.strip()]
    program = blocks[-1] if blocks else completion
    if not program.strip():
        return [Finding("no_program", "no code")]
    flat = " ".join(program.split())
    if prompt and len(flat) >= 20 and flat in " ".join(prompt.split()):
        return [Finding("copies_prompt", "the program is the prompt's own code")]
    try:
        tree = ast.parse(program)
    except (SyntaxError, ValueError):
        return []  # the verifier ran it, so it may be a body for the prompt's header
    if not any(_does_something(node) for node in tree.body):
        return [Finding("no_function_body", "only pass / ... / docstrings / imports")]
    return []


def _does_something(node: ast.stmt) -> bool:
    """A statement with behaviour: not an import, a docstring, `pass`, `...`, nor a
    function or class whose whole body is those."""
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.Pass)):
        return False
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
        return False  # a docstring or a bare `...`
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return any(_does_something(child) for child in node.body)
    return True


def r1_math_findings(completion: str, reference: Any, prompt: str | None) -> list[Finding]:
    if isinstance(reference, dict) and "math" in reference:
        reference = reference["math"]
    answer = re.search(_TAG_BODY.format("answer"), completion, re.DOTALL)
    text = answer.group(1) if answer else completion
    return format_findings(completion) + math_findings(text, reference, prompt)


RULES: dict[str, Callable[[str, Any, str | None], list[Finding]]] = {
    "math": math_findings, "exact": exact_findings, "format": format_findings,
    "ifeval": ifeval_findings, "code": code_findings, "r1_math": r1_math_findings,
    "math_verify": math_findings,  # the lenient peer answers the same questions
}
