"""What each supervised warm-start example looks like (`sft.prompt`, `sft.followup_template`).

"task": the record's prompt as a one-turn run renders it, then the taught completion.
"episode": the first prompt an episode in the run's environment opens with (the
environment's first messages, its tool list and note included, through the same turn
renderer the episodes use), so a cold start that teaches a first-turn tool call teaches
it on the text the policy will read when it makes one. With a `followup_template` the
record also gives a second example: the taught first turn is sent to a fresh episode
of the environment (a tool call runs for real), and the completion after its reply is
the follow-up: how to read a tool's result back, not only how to call it.
"""

from __future__ import annotations

from typing import Any, Callable

from rlvr.data.prompts import PromptRenderer
from rlvr.data.records import TaskRecord
from rlvr.episodes.render import TurnRenderer
from rlvr.training.config import SFTConfig

Pairs = list[tuple[str, str]]  # (prompt text, completion text) per example


def follow_up(record: TaskRecord, cfg: SFTConfig) -> str:
    """The second turn taught for `record`: the followup template, filled as
    target_template is (the reference and the record's metadata)."""
    return cfg.followup_template.format(reference=record.reference, **record.metadata)


def sft_examples(cfg: SFTConfig, renderer: PromptRenderer,
                 make_env: Callable[[TaskRecord], Any]) -> Callable[[TaskRecord, str], Pairs]:
    """(record, taught first turn) -> its examples (see the module docstring)."""
    if cfg.prompt == "task":
        return lambda record, completion: [(renderer.render(record), completion)]
    if cfg.prompt != "episode":
        raise ValueError(f"sft.prompt must be 'task' or 'episode', got {cfg.prompt!r}")
    turns = TurnRenderer(renderer)
    eos = renderer.tokenizer.eos_token_id

    def episode_examples(record: TaskRecord, completion: str) -> Pairs:
        env = make_env(record)
        try:
            first = turns.first_prompt(env.reset(record), tuple(getattr(env, "tools", ()) or ()),
                                       record.id)
            pairs = [(first.text, completion)]
            if not cfg.followup_template:
                return pairs
            reply = env.step(completion)
            if reply.done or not reply.observation:
                return pairs  # the first turn ended the episode: nothing follows it
            # the warm-start appends EOS to a completion (rlvr.training.sft); so did the turn
            closing = turns.tokenizer.decode([eos]) if eos is not None else ""
            context = (first.text + completion + closing
                       + turns.observation_text(first.conversation, eos, reply.observation))
            return [*pairs, (context, follow_up(record, cfg))]
        finally:
            getattr(env, "close", lambda: None)()
    return episode_examples
