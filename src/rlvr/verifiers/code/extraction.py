"""Finding the program in a completion: the last fenced code block, else the whole text."""

from __future__ import annotations

import re

# ```python / ```py / ```python3 / a bare ``` fence; the closing fence may be missing
# when generation stopped at the token limit.
_FENCE = re.compile(r"```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)",
                    re.DOTALL | re.IGNORECASE)


def extract_code(completion: str) -> str | None:
    """The code to run, or None when there is none. Preference: the last ```python (or
    bare) fenced block; with no fence at all, the whole completion; a completion whose
    only fences are other languages (```bash) has no Python code."""
    blocks = [b for b in _FENCE.findall(completion) if b.strip()]
    if blocks:
        return blocks[-1]
    if "```" in completion:  # only other languages' blocks (```bash): no Python here
        return None
    return completion if completion.strip() else None
