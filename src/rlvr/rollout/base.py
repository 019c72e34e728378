"""The rollout protocol the trainer and `rlvr eval` program against.

An engine turns rendered prompts into groups of sampled completions, with the token ids
and per-token log-probabilities of the sampling policy, so the trainer never re-runs a
forward pass just to learn what the sampler already knew. A vLLM engine implements the
same protocol; the trainer does not know which one it has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence


@dataclass(frozen=True)
class SamplingParams:
    """How to sample. temperature == 0 means greedy (then top_p/top_k are ignored)."""

    max_new_tokens: int = 256
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0  # 0 = off
    stop: tuple[str, ...] = ()  # stop strings; the text is cut before the first one
    seed: int | None = None
    # Engines that can keep their forward's activations for the update attach them to
    # each completion as extra["activations"] (rlvr.rollout.capture); others ignore it.
    keep_activations: bool = False


@dataclass
class Completion:
    """One sampled completion of one prompt.

    token_ids:     generated tokens only (no prompt), up to and including EOS / the
                   token that completed a stop string.
    logprobs:      one per token id: log-softmax of (logits / temperature) under the
                   sampling policy, before top-k/top-p filtering (the distribution the
                   trainer recomputes). Empty list for greedy decoding.
    text:          decoded completion (special tokens dropped, cut at a stop string).
    finish_reason: "eos" | "stop" | "length".
    """

    prompt_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: str
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class RolloutEngine(Protocol):
    def generate(self, prompts: Sequence[str], n: int,
                 params: SamplingParams) -> list[list[Completion]]:
        """For each prompt (already rendered text), `n` completions: result[i][j] is the
        j-th sample of prompt i."""
        ...

    def sync_weights(self, model: Any) -> None:
        """Make the engine sample from `model`'s current weights (a no-op for an engine
        that shares the trainer's module; a weight copy for vLLM)."""
        ...
