"""Does the answer only restate an expression from the prompt? (reason `echoes_prompt`)

The hack of issue 14 was `\\boxed{6 * 75}` for "What is 6 * 75?": the question's own
expression, which equals the gold. The value-form rule (answer_form.py) stops it for
plain-value golds; this check stops it for every gold, also under
`answer_form: equivalent` — `\\boxed{(x+1)^2}` for "Expand $(x+1)^2$." is the question
copied, not answered, even though it equals the gold `x^2+2x+1`.

Both texts are brought to one spelling first (`\\times`, `\\cdot`, `×` -> `*`; `\\div` -> `/`;
`\\frac{a}{b}` -> `a/b`; no `$`, braces, or spaces but between words), then the answer is looked up in
the prompt as a whole expression (`6*75` does not match inside `16*750`), also with the
operands of a single `+` or `*` swapped (`75 \\times 6`). Only answers that contain an
operation can echo: a bare number that also appears in the prompt ("What is 5 * 1?" ->
5) is an answer. When the gold itself is written in the prompt ("Which is larger,
$2^{10}$ or $10^3$?"), restating it is the task and the check is off.
"""

from __future__ import annotations

import re

_SPELLINGS = (
    (re.compile(r"\\(?:times|cdot|ast)(?![a-zA-Z])|[\u00d7\u00b7\u22c5\u2217]"), "*"),
    (re.compile(r"\\div(?![a-zA-Z])|\u00f7"), "/"),
    (re.compile(r"[\u2212\u2013]"), "-"),
    (re.compile(r"\\[dt]frac(?![a-zA-Z])"), r"\\frac"),
    (re.compile(r"\\(?:left|right|displaystyle)(?![a-zA-Z])|\\[,!;: ]|\$"), ""),
)
_FRACTION = re.compile(r"\\frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}")
_TOKEN = re.compile(r"^\s*[\w.]+\s*$")
_OPERATION = re.compile(r"[+*/^!=]|(?<=[\w)\]}])-|\\(?:sqrt|binom|log|ln|sin|cos|tan)(?![a-zA-Z])")
_SWAPPABLE = re.compile(r"^([^+*]+)([+*])([^+*]+)$")
MAX_PROMPT_CHARS = 20_000  # the question's text; longer context is not searched


def canonical(text: str) -> str:
    """`6 \\times 75` -> `6*75`; `\\frac{900}{2}` -> `900/2`; `2^{6}` -> `2^6`."""
    for pattern, replacement in _SPELLINGS:
        text = pattern.sub(replacement, text)
    for _ in range(4):  # nested fractions, innermost first
        text, count = _FRACTION.subn(_as_division, text)
        if not count:
            break
    text = " ".join(text.replace("{", " ").replace("}", " ").split())
    text = re.sub(r" ?([^\w ]) ?", r"\1", text)  # spaces only between words remain
    text = re.sub(r"(?<=\d) (?=[A-Za-z](?![A-Za-z]))", "", text)  # `2 x` is `2x`
    return text.replace("**", "*")


def _as_division(match: re.Match[str]) -> str:
    """`\\frac{900}{2}` -> `900/2`, `\\frac{x+1}{2}` -> `(x+1)/2`: as a person types it."""
    return "/".join(part if _TOKEN.match(part) else f"({part})" for part in match.groups())


def _occurs(expression: str, text: str) -> bool:
    """`expression` stands in `text` as a whole, not inside a longer number or name."""
    before = r"(?<!\w)(?<!\d\.)" if re.match(r"[\w.]", expression) else ""
    after = r"(?!\w)(?!\.\d)" if re.search(r"[\w.]$", expression) else ""
    return re.search(before + re.escape(expression) + after, text) is not None


def echoes_prompt(answer: str, prompt: str | None, gold: str) -> bool:
    """The answer is an expression written in the prompt (and the gold is not)."""
    if not prompt:
        return False
    expression = canonical(answer)
    if not expression or not _OPERATION.search(expression):
        return False
    question = canonical(prompt[:MAX_PROMPT_CHARS])
    if _occurs(canonical(gold), question):
        return False
    if _occurs(expression, question):
        return True
    swapped = _SWAPPABLE.match(expression)
    return bool(swapped) and _occurs(swapped.group(3) + swapped.group(2) + swapped.group(1),
                                      question)
