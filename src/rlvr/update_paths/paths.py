"""The update's forward, chosen once per run (`update.path`) and recorded.

Every path computes the same thing: the logits [B, T, V] (as RowLogits) that predict
each completion token of a packed batch (rlvr.training.batch's layout: prompts
left-padded to P columns, completions right-padded to T). They differ in the work:

  plain     the full batch through the model, every row repeating its prompt; any model.
  packed    each GRPO group as one row [prompt | completion 1 | ... | completion n] with
            a 4D tree mask (rlvr.accel.update.shared_prefix); models on sdpa/eager.
  tree      the packed row with rlvr's tree attention, only the allowed query/key pairs
            (rlvr.accel.update.tree_attention); Llama-family models on sdpa/eager.
  two_pass  per group, the prompt once into a KV cache, the completions on top
            (rlvr.accel.update.shared_prefix); not under gradient checkpointing.
  replay    the packed tree row from the sampler's kept activations
            (rlvr.accel.update.replay): no forward GEMM at all. Exact only until the
            weights move, so later minibatches/epochs and forwards of another model (the
            KL reference) take its fallback, the path `auto` would choose without replay.
            Never for episodes with environment tokens mid-completion: the sampler kept no
            activations for those tokens, so it refuses such a batch (ValueError).

A row's completion may hold environment tokens (an episode's): they are context, in the
attention (`span`) but not in the loss (`mask`). Every path but replay runs them as
ordinary tokens of the row; rows' lengths and attention come from `span`, never `mask`.

`resolve_update_path` turns the configured name into one of these once, from the model
and the run's shapes; `auto` is the old per-batch choice made once: replay where it can
run, else tree, else the cheapest of packed/two_pass/plain by the FLOP estimate
(shared_prefix.path_costs) at the configured shape. A path asked for by name that
cannot run is a ConfigError naming `update.path` and the reason. Each gradient forward
records the route it took (`take_ran`), so every metrics line says what ran, and the
resolved path says why no faster one was chosen (`reason`, update/path_reason).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Protocol, Sequence

import torch

from rlvr.algorithms.row_logits import RowLogits
from rlvr.config import ConfigError
from rlvr.models.families import gradient_checkpointing
from rlvr.accel.update.replay import replay_logits, why_not_replay
from rlvr.accel.update.shared_prefix import (PACKABLE_ATTENTION, Group, ModelShape,
                                             path_costs, shared_prompt_logits)
from rlvr.accel.update.tree_attention import supports_tree_attention

PATHS = ("plain", "packed", "tree", "two_pass", "replay")


class Rows(Protocol):
    """What a path reads from a packed batch (rlvr.training.batch.PackedBatch)."""
    input_ids: torch.Tensor       # [B, P+T]
    attention_mask: torch.Tensor  # [B, P+T]
    position_ids: torch.Tensor    # [B, P+T]
    completion_ids: torch.Tensor  # [B, T]
    mask: torch.Tensor            # [B, T] the model's tokens (the loss's; may have holes)
    activations: Sequence[Any] | None  # [B] rlvr.rollout.base.KeptActivations

    @property
    def width(self) -> int: ...

    @property
    def span(self) -> torch.Tensor: ...  # [B, T] every real completion token (attention)

    @property
    def has_environment_tokens(self) -> bool: ...


class UpdatePath:
    """One way to compute a batch's completion logits; remembers what ran with grad."""

    name = "plain"
    wants_activations = False  # ask the engine to keep activations (replay only)
    reason = ""  # why a faster path was not chosen (update/path_reason; "" = none was)

    def __init__(self) -> None:
        self._ran: list[str] = []

    def logits(self, model: Any, batch: Rows) -> RowLogits:
        """Logits [B, T, V] predicting batch.completion_ids, as RowLogits whose table
        this forward made (`owned`: its backward may overwrite it with its gradient;
        every path computes it afresh, the replay's as a copy of the kept logits)."""
        ran, logits = self._run(model, batch)
        if torch.is_grad_enabled():  # the update's forwards, not pi_old/reference ones
            self._ran.append(ran)
        return dataclasses.replace(logits, owned=True)

    def take_ran(self) -> str:
        """The routes the gradient forwards took since the last call ("replay",
        "replay+tree" when later minibatches fell back, "none" when no row had signal)."""
        ran, self._ran = "+".join(dict.fromkeys(self._ran)) or "none", []
        return ran

    def _run(self, model: Any, batch: Rows) -> tuple[str, RowLogits]:
        out = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                    position_ids=batch.position_ids, logits_to_keep=batch.width + 1)
        return "plain", RowLogits.of(out.logits[:, :-1])  # [B, T, V] rows, a view


class SharedPrefixPath(UpdatePath):
    """packed, tree or two_pass: each group's prompt runs once (shared_prefix.py)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def _run(self, model: Any, batch: Rows) -> tuple[str, RowLogits]:
        shared = shared_prompt_logits(model, batch.input_ids, batch.attention_mask,
                                      batch.completion_ids, batch.span, path=self.name)
        if shared is None:  # an empty prompt: no position predicts token 0 of its rows
            return super()._run(model, batch)
        return self.name, shared


class ReplayPath(UpdatePath):
    """The sampler's kept activations where exact, else `fallback`."""

    name = "replay"
    wants_activations = True

    def __init__(self, fallback: UpdatePath) -> None:
        super().__init__()
        self.fallback = fallback

    def _run(self, model: Any, batch: Rows) -> tuple[str, RowLogits]:
        if batch.has_environment_tokens:  # resolving the path for episodes rules replay out
            raise ValueError("the replay update path cannot run on episodes with environment "
                             "tokens: the sampler kept no activations for them (resolve "
                             "the path with RunShape.no_activations set)")
        replayed = replay_logits(model, batch.input_ids, batch.attention_mask,
                                 batch.completion_ids, batch.span, batch.activations)
        if replayed is None:  # weights moved since sampling, another model, nothing kept
            return self.fallback._run(model, batch)
        return "replay", replayed


@dataclass(frozen=True)
class RunShape:
    """What the choice needs to know about the run besides the model."""
    groups: int             # prompts per minibatch
    group_size: int         # G samples per prompt
    prompt_tokens: int      # a typical rendered prompt's length
    completion_tokens: int  # sampling.max_new_tokens
    # Why the engine will keep no activations for this run ("" when it will).
    no_activations: str = ""


def resolve_update_path(requested: str, model: Any, shape: RunShape) -> UpdatePath:
    """The path `update.path` names (`auto`: see the module docstring)."""
    if requested not in ("auto", *PATHS):
        raise ConfigError(f"unknown path {requested!r} (auto, {', '.join(PATHS)})",
                          "update.path")
    if requested != "auto":
        reason = why_not(requested, model, shape)
        if reason:
            raise ConfigError(f"{requested} cannot run: {reason}", "update.path")
    name = requested if requested != "auto" else (
        "replay" if why_not("replay", model, shape) is None else _cheapest(model, shape))
    path = ReplayPath(fallback=_build(_cheapest(model, shape))) if name == "replay" \
        else _build(name)
    path.reason = _why_not_faster(requested, name, model, shape)
    return path


def _why_not_faster(requested: str, name: str, model: Any, shape: RunShape) -> str:
    """Why `name` and not a faster path: asked for by name, or what ruled out replay and
    tree ("" when replay runs)."""
    if name == "replay":
        return ""
    if requested != "auto":
        return f"asked for: update.path={requested}"
    skipped = [f"{faster}: {why_not(faster, model, shape)}" for faster in ("replay", "tree")
               if faster != name and why_not(faster, model, shape)]
    return "; ".join(skipped)


def why_not(name: str, model: Any, shape: RunShape) -> str | None:
    """Why path `name` cannot run for this model and run (None: it can)."""
    config = model.config
    attention = getattr(config, "_attn_implementation", None)
    if name in ("packed", "tree") and attention not in PACKABLE_ATTENTION:
        return f"it needs sdpa or eager attention; the model uses {attention!r}"
    if name == "tree" and not supports_tree_attention(model):
        return (f"rlvr's tree attention supports Llama-family models without a sliding "
                f"window (rlvr.models.families); this is {config.model_type!r}")
    if name == "two_pass" and gradient_checkpointing(model):
        return ("it needs the KV cache, which gradient checkpointing drops "
                "(model.gradient_checkpointing=true)")
    if name == "replay":
        return shape.no_activations or why_not_replay(model)
    return None


def _cheapest(model: Any, shape: RunShape) -> str:
    """tree where it runs (it does two-pass's useful attention pairs without its extra
    gradients), else the cheapest by the FLOP estimate at the run's shape."""
    if why_not("tree", model, shape) is None:
        return "tree"
    model_shape = dataclasses.replace(ModelShape.of(model),
                                      no_cache=gradient_checkpointing(model))
    prompt = tuple(range(max(1, shape.prompt_tokens)))
    groups = [Group(prompt, list(range(shape.group_size)),
                    [shape.completion_tokens] * shape.group_size)] * shape.groups
    costs = path_costs(model_shape, groups, len(prompt), shape.completion_tokens, grad=True)
    costs.pop("tree", None)
    return min(costs, key=costs.__getitem__)


def _build(name: str) -> UpdatePath:
    return UpdatePath() if name == "plain" else SharedPrefixPath(name)
