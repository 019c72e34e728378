"""Opt-in guards against degenerate responses that satisfy IFEval's checks by design.

IFEval checks the form of a response, not whether it answers the request: "Hi" has
no commas, "the " repeated 300 times has at least 300 words, "A A A A" uses only
words that start with A, "{}" is JSON. The benchmark numbers depend on those
semantics, so the verifier keeps them by default; a training run, where a policy
searches for the cheapest text that passes, turns these guards on:

- min_words (int, default 0): a response with fewer words (`text.reader_words`)
  follows no instruction (reason "too_short").
- degenerate ("allow" | "reject", default "allow"): with "reject", a response that
  is degenerate follows no instruction (reason "degenerate"):
    * it has no word at all ("{}", '""', "!!!");
    * one word makes up more than half of its words (at least 4 words): "A A A A";
    * fewer than a quarter of its word trigrams are distinct (at least 12 words):
      one phrase or paragraph repeated (five times or more) to reach a length;
    * it only echoes what an instruction supplies: the request and nothing after it
      (combination:repeat_prompt), or the end phrase and nothing before it
      (startend:end_checker).
The thresholds sit far from honest prose, whose most frequent word is well under a
quarter of its words and whose trigrams are nearly all distinct: none of GSM8K's
questions and solutions or IFEval's prompts trips them, nor any MATH-500 solution
(the most repetitive, LaTeX-heavy ones have 30% distinct trigrams).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from rlvr.verifiers.ifeval.text import reader_words

DEGENERATE_MODES = ("allow", "reject")
_DOMINANT_SHARE, _DOMINANT_MIN_WORDS = 0.5, 4
_DISTINCT_TRIGRAMS, _TRIGRAM_MIN_WORDS = 0.25, 12


def repetition_problem(words: list[str]) -> str | None:
    """Why these words are degenerate by repetition, or None."""
    if not words:
        return "no words"
    folded = [w.casefold() for w in words]
    if len(folded) >= _DOMINANT_MIN_WORDS:
        word, count = Counter(folded).most_common(1)[0]
        if count / len(folded) > _DOMINANT_SHARE:
            return f"the word {word!r} is {count} of {len(folded)} words"
    if len(folded) >= _TRIGRAM_MIN_WORDS:
        trigrams = list(zip(folded, folded[1:], folded[2:]))
        if len(set(trigrams)) / len(trigrams) < _DISTINCT_TRIGRAMS:
            return f"only {len(set(trigrams))} of {len(trigrams)} word trigrams are distinct"
    return None


def echo_problem(instruction_id: str, kwargs: dict[str, Any], response: str) -> str | None:
    """Why the response is nothing but text an instruction hands it, or None. Only a
    response that does follow the instruction can be an echo of it."""
    text = response.strip()
    if instruction_id == "combination:repeat_prompt":
        request = kwargs["prompt_to_repeat"].strip()
        if text.lower().startswith(request.lower()) and not reader_words(text[len(request):]):
            return "only the repeated request"
    if instruction_id == "startend:end_checker":
        text, phrase = text.strip('"'), kwargs["end_phrase"].strip()
        if text.lower().endswith(phrase.lower()) and \
                not reader_words(text[:len(text) - len(phrase)]):
            return "only the end phrase"
    return None


class ResponseGuard:
    """The guard options of the ifeval verifier; `problem` is None for a response that
    may be graded, else (reason, explanation)."""

    def __init__(self, min_words: int = 0, degenerate: str = "allow") -> None:
        if isinstance(min_words, bool) or not isinstance(min_words, int) or min_words < 0:
            raise ValueError(f"ifeval: min_words must be an integer >= 0, got {min_words!r}")
        if degenerate not in DEGENERATE_MODES:
            raise ValueError(f"ifeval: degenerate must be one of {DEGENERATE_MODES}, "
                             f"got {degenerate!r}")
        self.min_words, self.reject_degenerate = min_words, degenerate == "reject"

    @property
    def active(self) -> bool:
        return self.min_words > 0 or self.reject_degenerate

    def problem(self, response: str, instructions: list[tuple[Any, dict[str, Any]]]
                ) -> tuple[str, str] | None:
        words = reader_words(response)
        if len(words) < self.min_words:
            return "too_short", f"{len(words)} words, fewer than min_words={self.min_words}"
        if not self.reject_degenerate:
            return None
        why = repetition_problem(words)
        for spec, kwargs in instructions:
            why = why or echo_problem(spec.id, kwargs, response)
        return ("degenerate", why) if why else None
