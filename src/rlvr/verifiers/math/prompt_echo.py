"""Does the answer only restate an expression from the prompt? (reason `echoes_prompt`)

The hack the math red-team run found was `\\boxed{6 * 75}` for "What is 6 * 75?": the question's own
expression, which equals the gold. The final-form rule (answer_form.py) stops it for
numeric golds; this check stops it for every gold, also under `answer_form:
equivalent` — `\\boxed{(x+1)^2}` for "Expand $(x+1)^2$." is the question copied, not
answered, even though it equals the gold `x^2+2x+1`.

Echo is structural. The prompt's expressions are found (math spans `$...$`, `\\(...\\)`,
`\\[...\\]`, and the runs of plain text left when words are taken out: "What is 6 * 75?"
holds `6 * 75`), split at top-level `=`, `<`, `>`, `,` and `;`, parsed, and each of
their sub-expressions kept as a canonical tree (tree_form.py, `echo=True`): modulo
order, grouping and neutral elements (`75 \\cdot 6`, `(1+x)^2`, `1(x+1)^2`, `x+0`),
spelling (`\\times`, `\\cdot`, `×`, `*`; `÷`, `\\div`; `−`; `√50`, `\\sqrt{050}`, `50^{1/2}`;
leading zeros) and repeated factors (`(x+1)(x+1)` is `(x+1)^2`). Surds keep their
spelling here: `\\sqrt{50}` is not `5\\sqrt2`.

The answer echoes the prompt when its canonical tree is one of those and not the
gold's own. So a right answer written as the gold is written is never an echo (1/4 of a
cake eaten, the answer `\\frac14`; "Which is larger, $2^{10}$ or $10^3$?" answered
`2^{10}`), a bare number or name never echoes (it holds no operation), and a gold
written in the prompt (a few-shot example) does not switch the check off.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from rlvr.verifiers.math.answer_form import is_rational_literal
from rlvr.verifiers.math.expressions import parse_tree
from rlvr.verifiers.math.normalize import normalize, unicode_to_latex
from rlvr.verifiers.math.structure import split_top_level
from rlvr.verifiers.math.tree_form import Node, canonical, has_operation

MAX_PROMPT_CHARS = 20_000  # the question's text; longer context is not searched
MAX_PIECES = 64  # expressions parsed from one prompt (each a grammar run)
_MATH_SPAN = re.compile(r"\$\$(.+?)\$\$|\$(.+?)\$|\\\((.+?)\\\)|\\\[(.+?)\\\]", re.S)
# a plain word (not a command: `\sqrt` keeps its name) or a lone article ends a run
_WORD = re.compile(r"(?<![\\A-Za-z])(?:[A-Za-z]{2,}|[aAI](?=\s+[A-Za-z]))(?![A-Za-z])")
_RUN_END = re.compile(r"[?!:;\n]|\.(?!\d)")
_ATOM = re.compile(r"^(?:[-+]?[\d.]+|[A-Za-z])$")
_SEPARATORS = ("=", "\\le", "\\ge", "\\leq", "\\geq", "<", ">", ",", ";")


def _pieces(prompt: str) -> list[str]:
    """The prompt's expressions as text: math spans, then plain-text runs."""
    spans = [next(g for g in m.groups() if g is not None) for m in _MATH_SPAN.finditer(prompt)]
    plain = _MATH_SPAN.sub("|", prompt)
    runs = _RUN_END.split(_WORD.sub("|", plain).replace("|", "\n"))
    pieces: list[str] = []
    for text in spans + runs:
        text = text.strip()
        if not text or not re.search(r"[\d\w\\]", text):
            continue
        parts = [text]
        for separator in _SEPARATORS:
            parts = [p for part in parts for p in split_top_level(part, separator)]
        # a lone number or letter holds no operation: not worth a grammar run
        pieces.extend(p for p in parts if p and not _ATOM.match(p))
    return pieces[:MAX_PIECES]


def _subtrees(node: Node) -> list[Node]:
    found = [node]
    for child in node[1:]:
        if isinstance(child, tuple):
            children = child if child and isinstance(child[0], tuple) else [child]
            for item in children:
                if isinstance(item, tuple) and item and isinstance(item[0], str):
                    found.extend(_subtrees(item))
    return found


@lru_cache(maxsize=256)
def prompt_expressions(prompt: str) -> frozenset[Node]:
    """Canonical trees (`echo=True`) of every expression written with an operation in
    `prompt`, and of their sub-expressions with one (cached: a GRPO group shares its
    prompt). `5 + 0` is kept though its tree is the number 5."""
    found: set[Node] = set()
    for piece in _pieces(unicode_to_latex(prompt[:MAX_PROMPT_CHARS])):
        tree = _tree(piece)
        if tree is None:
            continue
        try:
            echo, written = canonical(tree, echo=True), canonical(tree, surds=False)
        except Exception:  # an odd sympy object: that piece is not compared
            continue
        found.update(n for n in _subtrees(echo) if has_operation(n))
        if has_operation(written):
            found.add(echo)
    return frozenset(found)


# `\frac{6}{8}`, `6/8`, `6 \div 8`: the grammar divides integers while parsing, so the
# echo parse writes them as a product with a reciprocal, which it leaves alone
_INTEGER_DIVISION = re.compile(r"\\frac\s*\{\s*(\d+)\s*\}\s*\{\s*(\d+)\s*\}|\\frac\s*(\d)\s*(\d)"
                               r"|(?<![\w.}^])(\d+)\s*(?:/|\\div(?![a-zA-Z]))\s*(\d+)(?![\w.^])")


def _undivided(text: str) -> str:
    def product(match: re.Match[str]) -> str:
        numerator, denominator = (g for g in match.groups() if g is not None)
        return f"({numerator} \\cdot ({denominator})^{{-1}})"
    return _INTEGER_DIVISION.sub(product, text)


def _tree(text: str) -> Any:
    """The answer, gold or prompt piece as written (integer divisions undone)."""
    return parse_tree(_undivided(normalize(text).text))


def echoes_prompt(answer: str, prompt: str | None, gold: str) -> bool:
    """The answer is an expression written in the prompt, and not the gold's own."""
    if not prompt or is_rational_literal(normalize(answer).text):
        return False  # a number written out holds no operation (and costs no parse)
    tree = _tree(answer)
    if tree is None:
        return False
    try:
        written = canonical(tree, surds=False)
        if not has_operation(written):
            return False  # a bare number or name is an answer, wherever else it appears
        gold_tree = _tree(gold)
        if gold_tree is not None and canonical(gold_tree, surds=False) == written:
            return False  # a right answer in the gold's own form
        return canonical(tree, echo=True) in prompt_expressions(prompt)
    except Exception:  # an odd sympy object (BudgetExceeded is no Exception): not judged
        return False
