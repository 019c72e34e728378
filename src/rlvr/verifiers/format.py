"""The "format" verifier: structure rewards for reasoning models.

Passes when the completion is exactly

    <think> reasoning </think> <answer> answer </answer>

with only whitespace around and between the blocks: one think block first (unless
`require_think=False`), then exactly one answer block, and nothing after it. Both
blocks must hold content: a letter, a digit or a non-ASCII symbol (π, ∞, √).
Whitespace or punctuation alone ("<think></think>", "<think>...</think>") is empty,
since a policy rewarded for structure alone learns to emit the tags with nothing in
them (found by red-teaming). When `require_think=False` an empty think block is allowed:
that is how templates with thinking switched off write one ("<think>\n\n</think>").
Tag names are options. The reference is ignored (any value, usually null). Binary
score: meant as a gate or a small weighted bonus inside a "composite" verifier, as in
DeepSeek-R1's format reward.

Options:
  think_tag:       name of the reasoning tag (default "think").
  answer_tag:      name of the answer tag (default "answer").
  require_think:   a think block must come first (default True); when False, a
                   completion may be the answer block alone (a think block before it
                   is still allowed).
  think_in_prompt: the chat template already opened "<think>" in the prompt (as
                   DeepSeek-R1 and Qwen3 templates do), so the completion starts inside
                   the reasoning and its first tag is "</think>" (default False).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from rlvr.verifiers.base import Verdict


def has_content(text: str) -> bool:
    """Whether `text` holds more than whitespace and punctuation: a letter or digit, or
    a non-ASCII symbol (math answers such as "∞" or "√2" have no letter)."""
    return any(ch.isalnum() or (ord(ch) > 127 and unicodedata.category(ch) in ("Sm", "So"))
               for ch in text)


class FormatVerifier:
    name = "format"

    def __init__(self, think_tag: str = "think", answer_tag: str = "answer",
                 require_think: bool = True, think_in_prompt: bool = False) -> None:
        for tag in (think_tag, answer_tag):
            if not re.fullmatch(r"[A-Za-z_][\w.-]*", tag):
                raise ValueError(f"format: tag names must be plain words, got {tag!r}")
        if think_tag == answer_tag:
            raise ValueError("format: think_tag and answer_tag must differ")
        self.think, self.answer = think_tag, answer_tag
        self.require_think, self.think_in_prompt = require_think, think_in_prompt
        self._tag = re.compile(rf"</?(?:{re.escape(think_tag)}|{re.escape(answer_tag)})\s*>")

    def check_reference(self, reference: Any) -> None:
        """Any reference is fine: the format verifier does not read it."""

    def verify(self, completion: str, reference: Any = None) -> Verdict:
        text = f"<{self.think}>" + completion if self.think_in_prompt else completion
        tags = [(m.group(0).replace(" ", ""), m.start(), m.end()) for m in self._tag.finditer(text)]
        names = [t for t, _, _ in tags]
        think = [f"<{self.think}>", f"</{self.think}>"]
        answer = [f"<{self.answer}>", f"</{self.answer}>"]
        if names.count(answer[0]) == 0:
            return Verdict.wrong("no_answer_block")
        if names.count(answer[0]) > 1 or names.count(answer[1]) > 1:
            return Verdict.wrong("multiple_answer_blocks")
        reasoning = None
        if names == think + answer:
            pieces = [text[:tags[0][1]], text[tags[1][2]:tags[2][1]], text[tags[3][2]:]]
            body, reasoning = text[tags[2][2]:tags[3][1]], text[tags[0][2]:tags[1][1]]
        elif names == answer and not self.require_think:
            pieces = [text[:tags[0][1]], text[tags[1][2]:]]
            body = text[tags[0][2]:tags[1][1]]
        elif not names or names[0] != think[0]:
            return Verdict.wrong("no_think_block" if self.require_think else "bad_tag_order")
        else:
            return Verdict.wrong("bad_tag_order")
        if pieces[-1].strip():
            return Verdict.wrong("text_after_answer")
        if any(p.strip() for p in pieces[:-1]):
            return Verdict.wrong("text_outside_blocks")
        if self.require_think and reasoning is not None and not has_content(reasoning):
            return Verdict.wrong("empty_think")
        if not has_content(body):
            return Verdict.wrong("empty_answer")
        return Verdict.correct("well_formed", answer=body.strip()[:2000])
