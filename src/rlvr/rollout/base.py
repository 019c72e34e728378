"""The rollout protocol the trainer and `rlvr eval` program against.

An engine turns rendered prompts into groups of sampled completions, with the token ids
and per-token log-probabilities of the sampling policy, so the trainer never re-runs a
forward pass just to learn what the sampler already knew. A vLLM engine implements the
same protocol; the trainer does not know which one it has, only what it declares it can
do (`EngineCapabilities`). Engines are built by name (rlvr.rollout.factory).
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
    # each completion as `Completion.activations`; others ignore it.
    keep_activations: bool = False
    # The next call will continue some of this call's rows (an episode's next turn):
    # an engine that can keeps each row's keys/values for it (rlvr.rollout.prefix_store).
    keep_prefix: bool = False


@dataclass(frozen=True)
class EngineCapabilities:
    """What an engine can do, declared by the engine; the trainer's defaults follow.

    keeps_activations:      it can attach `KeptActivations` to completions (when
                            `SamplingParams.keep_activations` asks), which an update path
                            may replay instead of recomputing (rlvr.accel.update.replay).
    logprobs_match_trainer: its per-token log-probs are the trainer's forward's numbers
                            (same weights, same math), so they serve as pi_old as they
                            are. When not, the update recomputes pi_old and, by default,
                            weighs the loss by truncated importance ratios pi_old /
                            pi_sampler (`algorithm.rollout_correction`;
                            rlvr.algorithms.rollout_correction).
    """

    keeps_activations: bool
    logprobs_match_trainer: bool

    def recompute_old_logprobs(self, setting: bool | None) -> bool:
        """Whether the update recomputes pi_old: as configured (true/false), else
        (None) exactly when this engine's log-probs are not the trainer's."""
        return (not self.logprobs_match_trainer) if setting is None else setting


@dataclass(frozen=True)
class KeptActivations:
    """What the engine's forward computed for one completion, kept for the update.

    store: the engine's buffers for one decode call, shared by its completions
           (rlvr.accel.decode.capture.ActivationCapture for the HF engine's fast decode); it
           knows which model computed it through a weak reference (`made_by`), so a
           freed model's address reused by another object never matches.
    row:   this completion's generation row in the store.
    """

    store: Any
    row: int

    def made_by(self, model: Any) -> bool:
        return self.store.made_by(model)


@dataclass
class Completion:
    """One sampled completion of one prompt.

    token_ids:     generated tokens only (no prompt), up to and including EOS / the
                   token that completed a stop string.
    logprobs:      one per token id: log-softmax of (logits / temperature) under the
                   sampling policy, before top-k/top-p filtering (the distribution the
                   trainer recomputes). Empty list for greedy decoding.
    text:          decoded completion (special tokens dropped, cut at a stop string);
                   for an episode, the model's last turn (what a verifier grades).
    finish_reason: "eos" | "stop" | "length".
    loss_mask:     None for a one-turn completion (every token sampled); for an episode
                   (rlvr.episodes), one 0/1 per token id: 1 = the model sampled it, 0 = the
                   environment wrote it (context: out of the loss and its statistics; its
                   logprobs entry is 0).
    """

    prompt_ids: list[int]
    token_ids: list[int]
    logprobs: list[float]
    text: str
    finish_reason: str
    extra: dict[str, Any] = field(default_factory=dict)
    activations: KeptActivations | None = None  # engines that keep activations only
    loss_mask: list[int] | None = None

    @property
    def truncated(self) -> bool:
        return self.finish_reason == "length"


class RolloutEngine(Protocol):
    capabilities: EngineCapabilities  # for the model the engine now samples from

    def generate(self, prompts: Sequence[str], n: int,
                 params: SamplingParams) -> list[list[Completion]]:
        """For each prompt (already rendered text), `n` completions: result[i][j] is the
        j-th sample of prompt i. The text tokenized without added special tokens, then
        `generate_ids`."""
        ...

    def generate_ids(self, prompt_ids: Sequence[list[int]], n: int,
                     params: SamplingParams) -> list[list[Completion]]:
        """As `generate`, from token ids as they are (never re-tokenized): an episode's
        later turns continue the exact tokens the model sampled (rlvr.episodes)."""
        ...

    def sync_weights(self, model: Any, version: int | None = None) -> None:
        """Make the engine sample from `model`'s current weights (a no-op for an engine
        that shares the trainer's module; a weight copy for vLLM). `version` names the
        weights (the policy version) for an engine that keeps them elsewhere."""
        ...


@dataclass(frozen=True)
class RolloutPath:
    """Which decode forward an engine runs for its current model, resolved once per run
    and recorded as `rollout/path` and `rollout/path_reason` (metrics and summary).

    name:   "fast_llama+native" (rlvr's CPU decode with the native step), "fast_llama"
            (rlvr's CPU decode on torch's GEMMs), "hf" (transformers' forward), "vllm"...
    reason: why a faster path was not taken ("" when the fastest this engine has ran),
            e.g. "fast decode off: sampling.fast_decode=false", "no C compiler".
    """

    name: str
    reason: str = ""


def prefix_reuse(engine: Any) -> str:
    """How the engine reuses an episode's earlier turns' keys/values (its
    `prefix_reuse()`; recorded as `rollout/path_prefix_reuse`): e.g. "kept keys/values",
    "vllm prefix caching", "off: sampling.reuse_prefix=false"; "none" for an engine
    that does not say."""
    describe = getattr(engine, "prefix_reuse", None)
    return describe() if callable(describe) else "none"


def prefix_counters(engine: Any) -> dict[str, int]:
    """The engine's prefix-reuse counters since it started (its `prefix_counters()`):
    prompt tokens prefilled, prompt tokens taken from kept keys/values, rows not kept
    (past the memory budget); {} for an engine that keeps none (vLLM caches on its own)."""
    count = getattr(engine, "prefix_counters", None)
    return dict(count()) if callable(count) else {}


def prefix_metrics(before: dict[str, int], after: dict[str, int]) -> dict[str, float]:
    """A step's prefix reuse from the counters before and after its generation:
    rollout/prefix_prefilled_tokens, rollout/prefix_reused_tokens, rollout/prefix_reuse_share
    (reused / all prompt tokens) and rollout/prefix_rows_not_kept; {} without counters."""
    if not after:
        return {}
    delta = {k: after[k] - before.get(k, 0) for k in after}
    prompt = delta["prefilled_tokens"] + delta["reused_tokens"]
    return {"rollout/prefix_prefilled_tokens": float(delta["prefilled_tokens"]),
            "rollout/prefix_reused_tokens": float(delta["reused_tokens"]),
            "rollout/prefix_reuse_share": delta["reused_tokens"] / prompt if prompt else 0.0,
            "rollout/prefix_rows_not_kept": float(delta["rows_not_kept"])}


def rollout_path(engine: Any) -> RolloutPath:
    """The engine's `decode_path()`; an engine without one is named by its class."""
    describe = getattr(engine, "decode_path", None)
    return describe() if describe is not None else RolloutPath(type(engine).__name__)
