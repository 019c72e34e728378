"""IFEval "combination:*": repeat the request first; give two different responses."""

from __future__ import annotations

from rlvr.verifiers.ifeval.registry import instruction


@instruction("combination:repeat_prompt", "starts with the request repeated word for word "
             "(case-insensitive)", prompt_to_repeat="str")
def repeat_prompt(response: str, prompt_to_repeat: str) -> bool:
    return response.strip().lower().startswith(prompt_to_repeat.strip().lower())


@instruction("combination:two_responses", "exactly two different responses separated by "
             "******")
def two_responses(response: str) -> bool:
    parts = response.split("******")
    answers = []
    for index, part in enumerate(parts):
        if part.strip():
            answers.append(part.strip())
        elif index not in (0, len(parts) - 1):
            return False  # an empty response between two separators
    return len(answers) == 2 and answers[0] != answers[1]
