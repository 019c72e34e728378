"""IFEval "detectable_format:*": bullets, highlights, sections, JSON, title, fixed answers."""

from __future__ import annotations

import json
import re

from rlvr.verifiers.ifeval.registry import instruction

CONSTRAINED_OPTIONS = ("My answer is yes.", "My answer is no.", "My answer is maybe.")


@instruction("detectable_format:number_bullet_lists", "exactly N markdown bullet lines "
             "('* ' or '- ')", num_bullets="int")
def number_bullet_lists(response: str, num_bullets: int) -> bool:
    stars = re.findall(r"^\s*\*[^\*].*$", response, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", response, flags=re.MULTILINE)
    return len(stars) + len(dashes) == num_bullets


@instruction("detectable_format:constrained_response", "contains one of 'My answer is "
             "yes.' / 'no.' / 'maybe.'")
def constrained_response(response: str) -> bool:
    value = response.strip()
    return any(option in value for option in CONSTRAINED_OPTIONS)


@instruction("detectable_format:number_highlighted_sections", "at least N non-empty "
             "*highlighted* (or **bold**) spans", num_highlights="int")
def number_highlighted_sections(response: str, num_highlights: int) -> bool:
    # "**bold**" yields only empty single-star matches ("**" twice), so it counts once,
    # as a double; "*a* and *b*" counts two singles.
    singles = [h for h in re.findall(r"\*[^\n\*]*\*", response) if h.strip("*").strip()]
    doubles = [h for h in re.findall(r"\*\*[^\n\*]*\*\*", response)
               if h.removeprefix("**").removesuffix("**").strip()]
    return len(singles) + len(doubles) >= num_highlights


@instruction("detectable_format:multiple_sections", "at least N sections, each opened by "
             "the splitter word and a number ('SECTION 1')", section_spliter="pattern",
             num_sections="int")
def multiple_sections(response: str, section_spliter: str, num_sections: int) -> bool:
    pattern = r"\s?" + section_spliter.strip() + r"\s?\d+\s?"
    return len(re.split(pattern, response)) - 1 >= num_sections


@instruction("detectable_format:json_format", "the whole response parses as JSON (an "
             "optional ``` / ```json fence is removed first)")
def json_format(response: str) -> bool:
    value = response.strip()
    for fence in ("```json", "```Json", "```JSON", "```"):
        value = value.removeprefix(fence)
    value = value.removesuffix("```").strip()
    try:
        json.loads(value)
    except ValueError:
        return False
    return True


@instruction("detectable_format:title", "a non-empty title in double angular brackets, "
             "<<like this>>")
def title(response: str) -> bool:
    return any(t.lstrip("<").rstrip(">").strip() for t in re.findall(r"<<[^\n]+>>", response))
