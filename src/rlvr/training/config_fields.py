"""How a config field is declared: its help text (what `--describe` prints) beside it."""

from __future__ import annotations

from dataclasses import field


def _doc(help_text: str, choices: tuple[str, ...] = (), **kwargs):
    """A field with its help text; `choices` lists the accepted values of a field typed
    as a plain string (a Literal's values are listed by `--describe` on their own)."""
    metadata = {"help": help_text, **({"choices": choices} if choices else {})}
    return field(metadata=metadata, **kwargs)
