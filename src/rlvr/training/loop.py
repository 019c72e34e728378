"""The RLVR training loop, top to bottom.

    for each step:
        1. draw problems, run G episodes each                (rlvr.episodes, the engine)
        2. grade the episodes the environment left ungraded  (verifier pool workers)
        3. rewards -> group-relative advantages              (rlvr.algorithms)
        4. clipped policy-gradient update: epochs x minibatches of AdamW steps
        5. log metrics and every attempt; checkpoint every N steps

Helpers live in small modules (batch packing, rewards, checkpoints, setup); this file
holds the order of operations. Setup, the warm-start and evaluation are in `run.py`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Iterator

import torch

from rlvr.algorithms import (GroupAccumulator, kl_reward_per_sequence, mask_truncated,
                             token_logprobs_and_entropy)
from rlvr.algorithms import loss_terms
from rlvr.algorithms.objective import LossInputs
from rlvr.data.prompts import PromptRenderer
from rlvr.distributed.context import Dist, reduce_metrics
from rlvr.distributed.fsdp import full_state_dict, grad_norm, load_full_into
from rlvr.data.records import TaskRecord, prompt_text
from rlvr.environments.registry import environment_factory
from rlvr.episodes.render import TurnRenderer
from rlvr.episodes.runner import Episode, run_episodes
from rlvr.rollout.base import RolloutEngine, SamplingParams, prefix_counters, prefix_metrics
from rlvr.training.accumulate import combine_stats, micro_batches
from rlvr.training.algorithm import Algorithm, build_algorithm
from rlvr.training.batch import PackedBatch, pack
from rlvr.training.config import TrainConfig
from rlvr.training.episode_metrics import episode_metrics, episode_record
from rlvr.training.old_policy import FromUpdateForward, PiOld, old_policy
from rlvr.training.optim import release_gradients
from rlvr.training.prompt_order import PromptOrder, take
from rlvr.training.rewards import grade_episodes, reward_tensor, verdict_metrics
from rlvr.verifiers.pool import BatchVerifier


@dataclass
class Trainer:
    """Everything one RL step touches."""

    cfg: TrainConfig
    model: Any
    tokenizer: Any
    engine: RolloutEngine
    renderer: PromptRenderer
    pool: BatchVerifier
    optimizer: torch.optim.Optimizer
    scheduler: Any
    order: PromptOrder
    records: list[TaskRecord]
    reference: Any = None  # frozen reference policy; None when kl_beta == 0
    algo: Algorithm = field(init=False)
    update: Any = None  # the update's forward (rlvr.update_paths), resolved once by run.py
    dist: Dist = field(default_factory=Dist)  # this rank and the others (world 1: alone)
    sampler: Any = None  # under FSDP: the engine's unsharded copy of the policy
    # The two seams, resolved once by run.py and written on every metrics line:
    # rollout/path, rollout/path_reason, update/path_reason (`recorded_paths`).
    paths: dict[str, str] = field(default_factory=dict)
    # The environment of every task's episode: record -> Environment (run.py passes it;
    # None: `episodes.environment` of the config) and the turns' rendering.
    make_env: Any = None
    turns: Any = None
    # rollout.max_staleness >= 1: the producer process's groups and weights
    # (rlvr.training.async_rollouts.AsyncRollouts); None: this process samples each step
    producer: Any = None

    def __post_init__(self) -> None:
        # Stale samples' log-probs are not the update's pi_old: `auto` corrects them
        # (decoupled PPO with truncated IS; docs/training.md, "Asynchronous rollouts").
        self.algo = build_algorithm(self.cfg.algorithm, self.cfg.sampling.max_new_tokens,
                                    self.engine.capabilities.logprobs_match_trainer
                                    and not self.cfg.rollout.asynchronous)
        self.make_env = self.make_env or run_environment(self.cfg, self.tokenizer)
        self.turns = self.turns or TurnRenderer(self.renderer)


def run_environment(cfg: TrainConfig, tokenizer: Any) -> Any:
    """`make_env(record)`: the environment every task runs in, in training and held-out
    evaluation alike (rlvr.environments.registry)."""
    e = cfg.episodes
    return environment_factory(e.environment, e.options, e.limits(cfg.sampling.max_new_tokens),
                               getattr(tokenizer, "chat_template", None))


@dataclass
class Groups:
    """The generation batch after grading: P problems x G attempts."""

    records: list[TaskRecord]
    completions: list[list[Any]]   # [P][G] Completion
    verdicts: list[list[Any]]      # [P][G] Verdict
    rewards: torch.Tensor          # [P, G]
    stats: dict[str, float]
    episodes: list[list[Episode]] = field(default_factory=list)  # [P][G]
    prefix: dict[str, float] = field(default_factory=dict)  # rollout/prefix_* of the draws
    # [P] K >= 1: what sampled each group (staleness.SampledGroup.sampled_by), on its lines
    sampled: list[dict[str, int]] = field(default_factory=list)


def rl_step(t: Trainer, step: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One RL step; returns (metrics, rollout log lines)."""
    cfg, times = t.cfg, {}
    began = time.perf_counter()

    # 1-2. Sample and grade (DAPO dynamic sampling may draw several times).
    groups, gen_tokens = (collect_groups(t, step, times) if t.producer is None
                          else t.producer.collect(t, step, times))  # K >= 1: the producer's
    flat = [c for group in groups.completions for c in group]
    batch = pack(flat, t.tokenizer.pad_token_id or 0, _device(t.model))
    mask = batch.mask.float()  # [B, T]
    if cfg.reward.overlong == "mask":
        mask = mask_truncated(mask, batch.truncated)

    # 3. Rewards -> advantages (the KL penalty joins the reward when kl_in == "reward").
    update_began = time.perf_counter()
    rewards = groups.rewards.clone()  # [P, G] (this rank's groups)
    # pi_old: the sampler's log-probs, or the trainer's own when they differ (+ IS weights);
    # opt-in, the update forward's own (FromUpdateForward: weights and metrics come later)
    old_logprobs, is_weights, mismatch = old_policy(t, batch, mask)  # [B, T] each
    ref_logprobs = reference_logprobs(t, batch)  # [B, T] or None
    if ref_logprobs is not None and cfg.algorithm.kl_in == "reward":
        kl_tokens = t.algo.kl(old_logprobs, ref_logprobs)  # [B, T]
        rewards = rewards - kl_reward_per_sequence(kl_tokens, mask, cfg.algorithm.kl_beta
                                                   ).view_as(rewards)
    # Advantages over the whole step's groups (every rank's): batch-level estimators
    # (REINFORCE++) normalise over all of them; each rank keeps its own rows.
    shares = t.dist.gather(rewards)  # [[P_r, G]] in rank order
    rewards = torch.cat(shares)  # [P, G] global
    start = sum(len(share) for share in shares[:t.dist.rank])
    advantages = t.algo.advantage(rewards)[start:start + len(shares[t.dist.rank])]  # [P_r, G]

    # 4. Policy update: several epochs over minibatches of this batch.
    update = policy_update(t, step, batch, mask, advantages.flatten(), old_logprobs,
                           ref_logprobs, is_weights)
    if isinstance(old_logprobs, FromUpdateForward):
        mismatch = old_logprobs.stats(mask)  # over the rows the update ran
    times["update"] = time.perf_counter() - update_began
    sync_began = time.perf_counter()
    sync_sampler(t)  # a reference swap here; a gather under FSDP; a checked copy for vLLM
    if t.producer is not None:  # the next version, for the producer's next draw
        t.producer.publish(t.model)
    times["weight_sync"] = time.perf_counter() - sync_began
    sync_parts = dict(getattr(t.engine, "sync_stats", {}))  # an engine that copies weights

    metrics = step_metrics(t, step, groups, batch, mask, rewards, update, times, gen_tokens)
    metrics.update(mismatch)
    metrics.update(sync_parts)
    if t.producer is not None:  # staleness/*, async/*
        metrics.update(t.producer.stats)
    metrics["time/step"] = time.perf_counter() - began
    metrics["update/path"] = t.update.take_ran()  # the forwards this step's update ran
    metrics.update(t.paths)  # rollout/path and why no faster path runs (once per run)
    metrics = reduce_metrics(t.dist, metrics, keep=GLOBAL_METRICS,
                             tokens=float((mask > 0).sum()), per_token=per_token_stats(t))
    local = rewards[start:start + len(advantages)]
    rollouts = rollout_lines(step, groups, local, advantages) if cfg.log_rollouts else []
    if t.dist.active:  # every rank's attempts, in rank order, for rank 0 to write
        rollouts = [line for part in t.dist.gather(rollouts) for line in part]
    return metrics, rollouts


# computed from the whole step's rewards on every rank: not averaged again
GLOBAL_METRICS = ("step", "reward/mean", "reward/std", "groups_uniform", "lr")
MISMATCH_MEANS = ("mismatch/kl", "mismatch/abs_dlogprob", "mismatch/ratio_mean",
                  "correction/clipped_frac", "correction/weight_mean")


def per_token_stats(t: Trainer) -> tuple[str, ...]:
    """The statistics that are means over a rank's tokens (combined across ranks by
    token count, as micro-batches are: rlvr.training.accumulate)."""
    means = [k for k, how in t.algo.stat_reductions.items() if how == "mean"]
    return (*means, *MISMATCH_MEANS)


def sync_sampler(t: Trainer) -> None:
    """The engine samples from the updated weights: the policy itself, or under FSDP its
    unsharded copy, refreshed from the shards (a collective: every rank calls it)."""
    if t.sampler is None:
        t.engine.sync_weights(t.model)
        return
    load_full_into(t.sampler, full_state_dict(t.model))
    t.engine.sync_weights(t.sampler)


def collect_groups(t: Trainer, step: int, times: dict[str, float]) -> tuple[Groups, int]:
    """Draw prompts_per_step problems, sample and grade them; with dynamic sampling keep
    only groups whose rewards differ and draw again until the batch is full."""
    cfg, s = t.cfg, t.cfg.sampling
    draws = cfg.algorithm.max_draws if cfg.algorithm.dynamic_sampling else 1
    keep = GroupAccumulator(target_groups=s.prompts_per_step, max_draws=draws)
    times["generate"] = times["verify"] = 0.0
    gen_tokens, last, counters = 0, None, prefix_counters(t.engine)
    while not keep.done:
        records = take(t.records, t.order.next(s.prompts_per_step))
        params = SamplingParams(max_new_tokens=s.max_new_tokens, temperature=s.temperature,
                                top_p=s.top_p, top_k=s.top_k, stop=tuple(s.stop),
                                seed=_sampling_seed(cfg.seed, step, keep.draws),
                                # Only the replay path reads kept activations (it is
                                # never chosen under dynamic sampling's mixed draws, nor
                                # for episodes with environment turns: choose_update_path).
                                keep_activations=t.update.wants_activations)
        began = time.perf_counter()
        records, episodes = generate_shards(t, records, params)  # this rank's share
        times["generate"] += time.perf_counter() - began
        lengths = torch.tensor([[e.model_tokens for e in g] for g in episodes])  # [P, G]
        gen_tokens += int(lengths.sum())
        began = time.perf_counter()
        verdicts, scores = grade_episodes(t.pool, records, episodes, cfg.reward.verifier,
                                          cfg.reward.options)  # [P][G], [P, G]
        times["verify"] += time.perf_counter() - began
        rewards = reward_tensor(scores, lengths, cfg.reward.overlong, s.max_new_tokens,
                                cfg.reward.overlong_buffer)  # [P, G]
        completions = [[e.completion for e in g] for g in episodes]
        last = (rewards, list(zip(records, completions, verdicts, episodes)))
        if not cfg.algorithm.dynamic_sampling:
            break
        keep.add(*last)
    kept_rewards, kept = keep.result() if cfg.algorithm.dynamic_sampling else last
    if kept_rewards is None:  # every group was uniform in every draw: train on the last draw
        kept_rewards, kept = last
    stats = keep.stats() if cfg.algorithm.dynamic_sampling else {}
    records, completions, verdicts, episodes = (list(x) for x in zip(*kept))
    prefix = prefix_metrics(counters, prefix_counters(t.engine)) if s.reuse_prefix else {}
    return Groups(records, completions, verdicts, kept_rewards, stats, episodes,
                  prefix), gen_tokens


def generate_shards(t: Trainer, records: list[TaskRecord], params: SamplingParams
                    ) -> tuple[list[TaskRecord], list[list[Episode]]]:
    """The step's records split into `sampling.generation_shards` contiguous shards (at
    least one per rank), shard k's episodes sampled with its own seed: this rank's
    shards' records and episodes. One shard (the default, one process) is the whole draw
    with the draw's seed; a process with S shards samples exactly what S ranks do."""
    mine: list[TaskRecord] = []
    episodes: list[list[Episode]] = []
    for part, sampled in sample_shards(t, records, params):
        mine += part
        episodes += sampled
    return mine, episodes


def sample_shards(t: Trainer, records: list[TaskRecord], params: SamplingParams
                  ) -> Iterator[tuple[list[TaskRecord], list[list[Episode]]]]:
    """generate_shards one shard at a time: each of this rank's shards (its records and
    their [P_k][G] episodes) as soon as it is sampled (the rollout producer grades one
    shard while it samples the next)."""
    shards = max(t.cfg.sampling.generation_shards, t.dist.world)
    size = len(records) // shards
    for k in t.dist.my_shards(shards):
        part = records[k * size:(k + 1) * size]
        seed = params.seed if k == 0 or params.seed is None else params.seed + 7919 * k
        yield part, run_episodes(t.engine, t.turns, t.make_env, part,
                                 t.cfg.sampling.group_size, replace(params, seed=seed))


def reference_logprobs(t: Trainer, batch: PackedBatch) -> torch.Tensor | None:
    """Log-probs [B, T] of the sampled tokens under the frozen reference (KL only)."""
    if t.reference is None or t.cfg.algorithm.kl_beta == 0:
        return None
    with torch.no_grad():
        logprobs, _ = token_logprobs_and_entropy(t.update.logits(t.reference, batch),
                                                 batch.completion_ids, t.cfg.sampling.temperature)
        return logprobs


def policy_update(t: Trainer, step: int, batch: PackedBatch, mask: torch.Tensor,
                  advantages: torch.Tensor, old_logprobs: PiOld,
                  ref_logprobs: torch.Tensor | None,
                  is_weights: torch.Tensor | None = None) -> dict[str, float]:
    """`epochs` passes over `minibatches` slices of the batch, one AdamW step per slice.
    Returns each statistic's mean over the optimizer steps that measured it: the loss,
    rows_trained and grad_norm every step; the forward's statistics (entropy, KL, clip
    fractions, ratios) only steps that ran rows. When none did, those take their value
    on an empty batch (`unmeasured_stats`), so every step returns the same keys.
    is_weights [B, T]: the rollout correction's token weights (None: none).
    old_logprobs: pi_old [B, T], or a FromUpdateForward that each forward resolves."""
    a = t.cfg.algorithm
    rows = batch.input_ids.shape[0]
    shuffle = torch.Generator().manual_seed(_sampling_seed(t.cfg.seed, step, 10_000))
    totals: dict[str, float] = {}
    counts: dict[str, int] = {}
    t.model.train()
    for _ in range(a.epochs):
        order = torch.randperm(rows, generator=shuffle) if a.minibatches > 1 else torch.arange(rows)
        for index in order.to(mask.device).chunk(a.minibatches):
            stats = minibatch_step(t, batch.rows(index), mask[index], advantages[index],
                                   old_logprobs[index], _rows(ref_logprobs, index),
                                   _rows(is_weights, index))
            for name, value in stats.items():
                totals[name] = totals.get(name, 0.0) + value
                counts[name] = counts.get(name, 0) + 1
    t.model.eval()
    unmeasured = unmeasured_stats(t, ref_logprobs is not None)
    names = [*unmeasured, *(name for name in totals if name not in unmeasured)]
    return {name: totals[name] / counts[name] if name in counts else unmeasured[name]
            for name in names}


def unmeasured_stats(t: Trainer, with_kl: bool) -> dict[str, float]:
    """The forward's statistics for a step that ran no rows: the policy loss's own
    empty-batch values (clip fractions 0, ratios 1, approx_kl 0), entropy and KL as
    means over no tokens (0). rows_trained = 0 on the same line says why."""
    return {**t.algo.empty_stats, "entropy": 0.0, **({"kl": 0.0} if with_kl else {})}


def minibatch_step(t: Trainer, batch: PackedBatch, mask: torch.Tensor, advantages: torch.Tensor,
                   old_logprobs: PiOld, ref_logprobs: torch.Tensor | None,
                   is_weights: torch.Tensor | None = None) -> dict[str, float]:
    """Loss = the clipped surrogate and the further terms (+ beta * KL, - entropy bonus),
    aggregated; one AdamW step.

    The aggregation's normaliser comes from the whole minibatch's mask; the forward and
    backward then run only on rows whose loss can have a gradient (`rows_with_signal`),
    a micro-batch at a time (`accumulate_gradients`). The gradient is the same as one
    pass over every row: a row left out has a loss of exactly 0 with zero gradient.
    Statistics are over the rows that ran; with none, only the loss (0), rows_trained
    and grad_norm are reported (`policy_update` averages each over the steps that
    report it)."""
    # 0-dim: the whole minibatch's, every rank's rows (normalisers add over rows); over
    # the number of ranks because FSDP2 averages the ranks' gradients (a sum is wanted)
    normalizer = t.dist.sum(t.algo.aggregate.normalizer(mask)) / t.dist.world
    rows = rows_with_signal(t, mask, advantages)  # [b']
    t.optimizer.zero_grad(set_to_none=True)
    if rows.numel():
        stats = accumulate_gradients(t, rows, batch, mask, normalizer, advantages,
                                     old_logprobs, ref_logprobs, is_weights)
    else:  # nothing to learn from: a zero gradient, and AdamW still steps as it would
        for p in t.model.parameters():
            if p.requires_grad:
                p.grad = torch.zeros_like(p)
        stats = {"policy_loss": 0.0, "loss": 0.0}
    stats["rows_trained"] = float(rows.numel())
    norm = clip_gradients(t.model, t.cfg.optim.grad_clip)
    t.optimizer.step()
    t.scheduler.step()
    stats["grad_norm"] = float(norm)
    release_gradients(t.optimizer)
    return stats


def accumulate_gradients(t: Trainer, rows: torch.Tensor, batch: PackedBatch,
                         mask: torch.Tensor, normalizer: torch.Tensor,
                         advantages: torch.Tensor, old_logprobs: PiOld,
                         ref_logprobs: torch.Tensor | None,
                         is_weights: torch.Tensor | None = None) -> dict[str, float]:
    """Forward and backward over `rows` [b'] of the minibatch, in micro-batches of at
    most `algorithm.micro_batch_rows` rows / `micro_batch_tokens` tokens; gradients add
    up in `.grad`. Every piece weights its tokens by the minibatch's `normalizer`, and
    the statistics combine as one pass would report them (rlvr.training.accumulate)."""
    a = t.cfg.algorithm
    tokens = batch.attention_mask[rows].sum(1) if a.micro_batch_tokens > 0 else None  # [b']
    pieces = micro_batches(rows, tokens, a.micro_batch_rows, a.micro_batch_tokens)
    parts = []
    for piece in pieces:
        piece_mask = mask[piece]  # [m, T]
        stats = _loss_backward(t, batch.rows(piece), piece_mask,
                               t.algo.aggregate.weights(piece_mask, normalizer),
                               advantages[piece], old_logprobs[piece],
                               _rows(ref_logprobs, piece), _rows(is_weights, piece))
        parts.append((stats, float((piece_mask > 0).sum()) if len(pieces) > 1 else 0.0))
    return parts[0][0] if len(parts) == 1 else combine_stats(parts, t.algo.stat_reductions)


def clip_gradients(model: Any, clip: float) -> torch.Tensor:
    """Total gradient norm; gradients scaled to `clip` when above it (clip <= 0: never).
    Unlike clip_grad_norm_, which always multiplies (by 1 when under the limit, to
    avoid a device sync), this writes the gradients only when it clips: a pass over
    every gradient saved on most steps."""
    with_grads = [p for p in model.parameters() if p.grad is not None]
    norm = grad_norm(torch.nn.utils.get_total_norm([p.grad for p in with_grads]))  # FSDP: full
    if clip > 0 and float(norm) > clip:
        torch.nn.utils.clip_grads_with_norm_(with_grads, clip, norm)
    return norm


def rows_with_signal(t: Trainer, mask: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """Indices [b'] of the rows the update must run: every row when
    `algorithm.skip_zero_advantage` is off; else as the loss terms in use declare
    (rlvr.algorithms.loss_terms.rows_with_signal)."""
    # Under FSDP every rank runs every row: a rank that skipped its forward would leave
    # the others waiting in the layers' all-gathers.
    if not t.cfg.algorithm.skip_zero_advantage or t.dist.active:
        return torch.arange(mask.shape[0], device=mask.device)
    return loss_terms.rows_with_signal((t.algo.policy_loss, *t.algo.terms), mask, advantages)


def _loss_backward(t: Trainer, batch: PackedBatch, mask: torch.Tensor, weights: torch.Tensor,
                   advantages: torch.Tensor, old_logprobs: PiOld,
                   ref_logprobs: torch.Tensor | None,
                   is_weights: torch.Tensor | None = None) -> dict[str, float]:
    temperature = t.cfg.sampling.temperature
    # One pass over the logits rows gives both; entropy is differentiable, and costs no
    # backward work unless an entropy bonus uses it.
    logprobs, entropy = token_logprobs_and_entropy(t.update.logits(t.model, batch),
                                                   batch.completion_ids, temperature)  # [b, T]
    if isinstance(old_logprobs, FromUpdateForward):  # pi_old: these weights, detached
        old_logprobs, is_weights = old_logprobs.resolve(logprobs, mask)
    out = t.algo.objective(LossInputs(logprobs, entropy, old_logprobs, advantages, mask, weights,
                                      ref_logprobs, is_weights))
    out.loss.backward()
    return out.stats


def step_metrics(t: Trainer, step: int, groups: Groups, batch: PackedBatch, mask: torch.Tensor,
                 rewards: torch.Tensor, update: dict[str, float], times: dict[str, float],
                 gen_tokens: int) -> dict[str, Any]:
    lengths = batch.mask.sum(1).float()  # [B]
    metrics: dict[str, Any] = {
        "step": step, "reward/mean": float(rewards.mean()), "reward/std": float(rewards.std()),
        **verdict_metrics(groups.verdicts),
        "response_length/mean": float(lengths.mean()), "response_length/max": float(lengths.max()),
        "truncation_rate": float(batch.truncated.float().mean()),
        "groups_uniform": float((rewards.std(dim=1) == 0).float().mean()),
        "lr": t.scheduler.get_last_lr()[0],
        "tokens_per_s": gen_tokens / max(times["generate"], 1e-9),
        **{f"time/{k}": v for k, v in times.items()},
        **update,
    }
    metrics.update({f"dynamic/{k}": v for k, v in groups.stats.items()})
    if groups.episodes and not plain_single_turn(t.cfg):
        metrics.update(groups.prefix)  # a turn after the first reuses its episode's prefix
        scores = [[v.score for v in g] for g in groups.verdicts]  # > 0 exactly when rewarded
        metrics.update(episode_metrics(groups.episodes, scores, t.cfg.episodes.max_turns))
    return metrics


def plain_single_turn(cfg: TrainConfig) -> bool:
    """One prompt, one answer, no environment of the operator's: its episode/* metrics
    would be constants (one turn, no tools, no environment time), so they are not logged."""
    return cfg.episodes.environment == "single_turn" and cfg.episodes.max_turns == 1


def rollout_lines(step: int, groups: Groups, rewards: torch.Tensor,
                  advantages: torch.Tensor) -> list[dict[str, Any]]:
    lines = []
    for p, (record, completions, verdicts) in enumerate(zip(groups.records, groups.completions,
                                                            groups.verdicts)):
        prompt = prompt_text(record)
        for g, (c, v) in enumerate(zip(completions, verdicts)):
            lines.append({"step": step, "prompt_id": record.id, "sample": g,
                          "prompt": prompt, "reference": record.reference,
                          "completion": c.text, "finish_reason": c.finish_reason,
                          "length": len(c.token_ids), "verdict": v.to_dict(),
                          "reward": float(rewards[p, g]), "advantage": float(advantages[p, g])})
            if groups.episodes:  # the turns, the end and, with several turns, the transcript
                lines[-1]["episode"] = episode_record(groups.episodes[p][g])
            if groups.sampled:
                lines[-1].update(groups.sampled[p])
    return lines


def _rows(values: torch.Tensor | None, index: torch.Tensor) -> torch.Tensor | None:
    """values[index], or None for a tensor that is not there (no reference, no weights)."""
    return None if values is None else values[index]


def _sampling_seed(seed: int, step: int, draw: int) -> int:
    """A distinct, reproducible seed per (run seed, step, draw): a resumed run samples
    exactly what the uninterrupted one did, without saving generator state."""
    return (seed * 1_000_003 + step * 1_009 + draw) % (2**63 - 1)


def _device(model: Any) -> torch.device:
    return next(model.parameters()).device
