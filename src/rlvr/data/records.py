"""The task record every dataset is mapped to (docs/contracts.md, "A task record")."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

ChatMessages = list[dict[str, str]]  # [{"role": "user", "content": "..."}]


@dataclass(frozen=True)
class TaskRecord:
    """One problem.

    prompt:    plain text, or chat messages rendered later by the tokenizer's template.
    reference: what the verifier checks against (shape depends on the verifier).
    verifier:  registry name ("math", "code", "ifeval", "exact", a composite ...).
    id:        stable identifier (used in rollouts.jsonl, eval results, pass@k grouping).
    metadata:  free extras carried through to logs (subject, level, source line ...).
    options:   verifier options for this record (e.g. {"fallback": "last_number"}).
    """

    prompt: str | ChatMessages
    reference: Any
    verifier: str
    id: str
    metadata: dict[str, Any] = field(default_factory=dict)
    options: dict[str, Any] = field(default_factory=dict)


def prompt_text(record: TaskRecord) -> str:
    """The task as plain text: the prompt itself, or the chat's user turns joined. This
    is what verifiers see as the `prompt` (the math verifier checks that an answer is
    not just the question's own expression), and what run logs record per attempt."""
    if isinstance(record.prompt, str):
        return record.prompt
    return "\n\n".join(str(m.get("content", "")) for m in record.prompt
                        if m.get("role", "user") == "user")


def write_records_jsonl(items: Sequence[TaskRecord], path: str | Path) -> None:
    """Records as data-file lines (prompt, reference, verifier, id); rlvr's loader reads
    them back with id_field `id` (the ecosystem adapters' `--out` files)."""
    import json

    with open(path, "w", encoding="utf-8") as out:
        for r in items:
            out.write(json.dumps({"prompt": r.prompt, "reference": r.reference,
                                  "verifier": r.verifier, "id": r.id}) + "\n")
