"""A whole run: set up, warm-start, evaluate, train, checkpoint, evaluate, summarise.

Fresh run:   config.yaml -> model -> SFT warm-start (if sft.steps) -> held-out eval
             ("before") -> checkpoint step 0 -> RL steps (checkpoint every N) ->
             held-out eval ("after") -> final checkpoint -> summary.json.
Resumed run: the newest complete checkpoint restores weights, optimizer, scheduler,
             RNGs, data position and the "before" numbers; logs past it are dropped;
             the RL steps continue exactly where they stopped. A finished run given a
             larger `steps` continues the same way (what else a resume may change:
             rlvr.training.resume).
"""

from __future__ import annotations

import copy
import gc
import json
import random
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rlvr.audit.live import LiveAudit
from rlvr.config import config_to_dict, load_config, save_config
from rlvr.data.records import TaskRecord
from rlvr.distributed.context import Dist, check_same, init_from_env, peer_failures
from rlvr.distributed.fsdp import save_optimizer, shard
from rlvr.errors import UserError
from rlvr.rollout.base import prefix_reuse, rollout_path
from rlvr.rollout.factory import build_engine
from rlvr.runs import Progress, ReadOnlyRunDir, RunDir
from rlvr.runs.trackers import TrackerSet
from rlvr.runs.verifier import run_verifier
from rlvr.training.async_rollouts import async_rollouts
from rlvr.training.batch import choose_update_path
from rlvr.training.checkpoint import (OPTIMIZER_DCP, checkpoint_step, latest_checkpoint,
                                      load_trainer_state, save_checkpoint, staging_dir)
from rlvr.training.config import TrainConfig, check_distributed
from rlvr.training.config_rollout import trainer_engine
from rlvr.training.clock import TrainingClock
from rlvr.training.evaluate import EvalSchedule, HeldOutLog, held_out_evaluator
from rlvr.training.guard import RunGuard, check_guard
from rlvr.training.loop import Trainer, rl_step, run_environment
from rlvr.training.old_policy import pi_old_source
from rlvr.training.memory import retain_freed_memory
from rlvr.training.optim import allocate_state, build_optimizer, build_scheduler
from rlvr.training.prompt_order import PromptOrder
from rlvr.training.resume import check_resumable
from rlvr.training.rewards import check_reward_backend, scoring_pool
from rlvr.training.setup import (check_model_path, engine_options, load_data, load_policy,
                                 prompt_renderer)
from rlvr.training.sft import supervised_warmstart
from rlvr.training.sft_prompts import sft_examples
from rlvr.training.tracking import check_trackers, finish_status, start_trackers
from rlvr.verifiers.pool import BatchVerifier


class ResumeError(UserError, RuntimeError):
    """The run directory cannot be resumed (no checkpoint, or the run already ended)."""


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def train(cfg: TrainConfig, run_dir: str | Path, resume: bool = False,
          progress: Progress | None = None) -> dict[str, Any]:
    """Run (or resume) training in `run_dir`; returns the summary written to summary.json."""
    started = time.perf_counter()
    dist = join_ranks(cfg, resume)  # alone (world 1) unless launched by torchrun
    train_records, held_out = _checked_inputs(cfg)
    held_out = held_out if dist.is_main else []  # rank 0 evaluates; the others wait
    run = RunDir(run_dir).create() if dist.is_main else ReadOnlyRunDir(run_dir)
    dist.barrier()  # the run directory exists before any other rank reads it
    progress = progress if progress is not None and dist.is_main else Progress(cfg.steps,
                                                                                quiet=True)
    checkpoint = _resumed_from(cfg, run) if resume else None
    if dist.is_main:
        save_config(cfg, run.config)  # a resumed run's too: its `steps` may have grown
    # Started before the model: a tracker that cannot start fails the run here.
    trackers = start_trackers(cfg, run, 1 + (checkpoint_step(checkpoint) if checkpoint else 0),
                              dist.is_main, progress.message)
    seed_everything(cfg.seed)
    if cfg.model.retain_freed_memory:
        retain_freed_memory()
    engine = None
    try:  # an engine with its own process state (vLLM: files in /dev/shm) is closed
        model, tokenizer = load_policy(cfg.model, cfg.seed, checkpoint)
        model, sampler = shard_policy(dist, model, cfg.model.device)
        renderer = prompt_renderer(cfg.prompt, tokenizer)
        # K >= 1: hf, for the held-out evaluation; the producer builds the run's engine
        engine = build_engine(trainer_engine(cfg), sampler or model, tokenizer,
                              engine_options(cfg))
        # Chosen once, before the warm-start: a path that cannot run fails here.
        update = choose_update_path(plain_update(cfg) if dist.active else cfg, model, engine,
                                    tokenizer, renderer.render, train_records)
        if dist.active:  # not asked for: recorded as what it is
            update.reason = "FSDP runs the plain update (the fast paths are single-process)"
        # reward models score here, on the policy's device (rlvr.training.rewards)
        with scoring_pool(cfg, train_records, next(model.parameters()).device) as pool:
            make_env = run_environment(cfg, tokenizer)
            log_eval = _held_out_log(cfg, engine, renderer, pool, held_out, make_env, run,
                                     progress, trackers, started)
            state: dict[str, Any] = {"elapsed": 0.0}
            if checkpoint is None:
                state = _warm_start(cfg, model, tokenizer, renderer, train_records, log_eval,
                                    progress, engine, make_env)
                state["elapsed"] = time.perf_counter() - started
            trainer = _trainer(cfg, model, tokenizer, engine, renderer, pool, train_records, run,
                               dist, sampler, make_env)
            trainer.update = update
            trainer.paths = {**recorded_paths(engine, update, cfg),
                             "update/pi_old": pi_old_source(trainer)}
            state = _first_checkpoint_or_resume(trainer, run, state, checkpoint, progress)
            # the collapse watch and the best checkpoint (a resume replays the kept logs)
            guard = RunGuard(cfg, run, progress, dist, state.get("step") if checkpoint else None)
            guard.evaluated(0, state.get("eval_before", {}) if checkpoint is None else {},
                            trainer)
            _settle_memory(trainer)
            try:  # K >= 1: the rollout producer, stopped however the steps end
                with async_rollouts(trainer, int(state.get("step", 0)) + 1):
                    summary = _rl_steps(trainer, run, state, log_eval, progress, trackers,
                                        guard)
            finally:
                gc.unfreeze()  # train() may be called again in this process (tests, notebooks)
    except BaseException as error:
        trackers.finish(finish_status(error))
        raise
    finally:
        getattr(engine, "close", lambda: None)()
    trackers.finish(finish_status(None))
    summary["wall_seconds"] = state["elapsed"]
    summary.update({"update/path": update.name, **trainer.paths})
    run.write_summary(summary)
    dist.barrier()  # every rank done before any leaves (rank 0 wrote the summary)
    dist.close()
    return summary


def _held_out_log(cfg: TrainConfig, engine: Any, renderer: Any, pool: Any,
                  held_out: list[TaskRecord], make_env: Any, run: RunDir, progress: Progress,
                  trackers: Any, started: float) -> HeldOutLog:
    """The held-out evaluation as the run calls it (before RL, on its schedule, after;
    episodes in the run's environment when they have several turns), each evals.jsonl
    line also sent to the trackers."""
    evaluate_now = held_out_evaluator(cfg, engine, renderer, pool, held_out, make_env,
                                      progress)
    log_eval = HeldOutLog(evaluate_now, run, TrainingClock(), wall_origin=started)
    log_eval.on_row = trackers.log_evals
    return log_eval


def _settle_memory(trainer: Trainer) -> None:
    """After the step-0 checkpoint (which then holds no all-zero moments) and a resume
    (whose state is loaded): AdamW's moments now, below every step's temporaries. And
    everything built so far (model, tokenizer, data, modules imported) lives for the
    whole run: freezing it keeps Python's full collections from re-scanning it, which
    cost ~0.16 s every few steps on SmolLM2 (CPython's gc.freeze)."""
    allocate_state(trainer.optimizer)
    gc.collect()
    gc.freeze()


def _checked_inputs(cfg: TrainConfig) -> tuple[list[TaskRecord], list[TaskRecord]]:
    """The training and held-out records, after every check that needs no model: bad
    input fails here, before anything is written."""
    check_model_path(cfg.model)
    check_reward_backend(cfg.reward)  # reward.backend=ray without Ray
    check_trackers(cfg.logging)  # logging.backends=[wandb] without wandb
    train_records, held_out = load_data(cfg.data, cfg.seed)
    check_guard(cfg, held_out)  # eval.keep_best without held-out data
    return train_records, held_out


def _first_checkpoint_or_resume(trainer: Trainer, run: RunDir, state: dict[str, Any],
                                checkpoint: Path | None, progress: Progress) -> dict[str, Any]:
    """A fresh run writes its step-0 checkpoint; a resumed one loads the optimizer,
    scheduler and data order of `checkpoint` (its weights are already loaded)."""
    if checkpoint is None:
        _checkpoint(trainer, run, 0, state)
        return state
    state = load_trainer_state(checkpoint, trainer.optimizer, trainer.scheduler, trainer.model)
    trainer.order.load_state_dict(state["data"])
    progress.message(f"resuming {run.path} from step {state['step']}")
    return state


def _resumed_from(cfg: TrainConfig, run: RunDir) -> Path:
    """The checkpoint a resume continues from, its config checked against the run's and
    the logs cut back to its step: before the model loads, so a changed value or a
    damaged log line stops the resume here."""
    if run.config.is_file():  # the CLI checked the overrides; this, the values
        check_resumable(load_config(TrainConfig, run.config), cfg)
    checkpoint = _resume_point(cfg, run)
    run.truncate_logs_after(checkpoint_step(checkpoint))
    return checkpoint


def _resume_point(cfg: TrainConfig, run: RunDir) -> Path:
    """The checkpoint a resumed run continues from; ResumeError when there is none, when
    it lies past cfg.steps, or when the run already finished cfg.steps."""
    checkpoint = latest_checkpoint(run.checkpoints)
    if checkpoint is None:
        raise ResumeError(f"{run.path}: no complete checkpoint to resume from")
    step = checkpoint_step(checkpoint)
    if step > cfg.steps:
        raise ResumeError(f"{run.path}: its checkpoint is at step {step}, past steps="
                          f"{cfg.steps}; give steps={step} or more")
    if step == cfg.steps and _finished_steps(run) == cfg.steps:
        raise ResumeError(f"{run.path}: the run already finished its {cfg.steps} steps; "
                          f"extend it with steps=N (N > {cfg.steps})")
    return checkpoint


def _finished_steps(run: RunDir) -> int | None:
    """The steps a finished run's summary.json reports (None: not finished)."""
    if not run.summary.is_file():
        return None
    return json.loads(run.summary.read_text(encoding="utf-8")).get("steps")


def _warm_start(cfg: TrainConfig, model: Any, tokenizer: Any, renderer: Any, records: list,
                log_eval: HeldOutLog, progress: Progress, engine: Any,
                make_env: Any) -> dict[str, Any]:
    """SFT (if configured) and the "before" evaluation of a fresh run."""
    state: dict[str, Any] = {}
    if cfg.sft.steps > 0:
        progress.message(f"supervised warm-start: {cfg.sft.steps} steps")
        sft_progress = progress.phase("sft", cfg.sft.steps)
        state["sft"] = supervised_warmstart(model, tokenizer, renderer, records, cfg.sft,
                                            cfg.seed + cfg.sft.seed_offset, sft_progress.step,
                                            sft_examples(cfg.sft, renderer, make_env))
        sft_progress.close()
        engine.sync_weights(model)  # an engine with its own copy (vLLM) samples from SFT's
    state["eval_before"] = log_eval(0)
    if state["eval_before"]:
        progress.message(f"held-out accuracy before RL: {state['eval_before']['accuracy']:.3f}")
        progress.held_out(state["eval_before"]["accuracy"])
    return state


def _trainer(cfg: TrainConfig, model: Any, tokenizer: Any, engine: Any, renderer: Any,
             pool: BatchVerifier, records: list, run: RunDir, dist: Dist,
             sampler: Any, make_env: Any) -> Trainer:
    o, a = cfg.optim, cfg.algorithm
    optimizer = build_optimizer(model, o.lr, o.weight_decay, o.betas)
    total = max(1, cfg.steps * a.epochs * a.minibatches)
    scheduler = build_scheduler(optimizer, o.warmup_steps, total, o.schedule, o.min_lr_ratio)
    reference = _reference_model(cfg, sampler or model, tokenizer, run, dist)
    if reference is not None and dist.active:
        reference = shard(reference, _device_type(cfg), dist.world)
    return Trainer(cfg, model, tokenizer, engine, renderer, pool, optimizer, scheduler,
                   PromptOrder(len(records), cfg.seed), records, reference, dist=dist,
                   sampler=sampler, make_env=make_env)


def _reference_model(cfg: TrainConfig, model: Any, tokenizer: Any, run: RunDir,
                     dist: Dist) -> Any:
    """The frozen policy at the start of RL (saved in the run dir so a resumed run uses the
    same one); None at kl_beta == 0, when no reference is loaded at all."""
    if cfg.algorithm.kl_beta == 0:
        return None
    directory = run.path / "reference"
    if directory.is_dir():
        reference, _ = load_policy(cfg.model, cfg.seed, directory)
    else:
        reference = copy.deepcopy(model)
        if dist.is_main:
            reference.save_pretrained(directory)
            tokenizer.save_pretrained(directory)
    dist.barrier()
    reference.eval().requires_grad_(False)
    return reference


def _checkpoint(t: Trainer, run: RunDir, step: int, state: dict[str, Any]) -> None:
    """One process: the model, optimizer and state, atomically. Ranks: rank 0 writes the
    full model (the sampler's copy: the policy gathered after the last update) and the
    state; every rank writes its optimizer shards (torch.distributed.checkpoint)."""
    keep = {k: v for k, v in state.items()
            if k in ("sft", "eval_before", "elapsed", "train_seconds")}
    extra = {**keep, "data": t.order.state_dict(), "ranks": t.dist.world}
    if not t.dist.active:
        save_checkpoint(run.checkpoints, step, t.model, t.tokenizer, t.optimizer, t.scheduler,
                        extra, t.cfg.keep_checkpoints)
        return
    staging = staging_dir(run.checkpoints, step)
    if t.dist.is_main:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
    t.dist.barrier()
    # DCP's state-dict getter creates a missing AdamW state by taking a step, which would
    # count in the bias correction of the first real one: create it (step 0) first
    allocate_state(t.optimizer)
    save_optimizer(t.model, t.optimizer, staging / OPTIMIZER_DCP)
    t.dist.barrier()
    if t.dist.is_main:
        save_checkpoint(run.checkpoints, step, t.sampler, t.tokenizer, None, t.scheduler,
                        extra, t.cfg.keep_checkpoints, staged=True)
    t.dist.barrier()


def join_ranks(cfg: TrainConfig, resume: bool) -> Dist:
    """This process's place among torchrun's ranks, the config checked identical on all
    and supported there (ConfigError names the field), before any model is built."""
    dist = init_from_env(cfg.model.device, cfg.distributed.timeout_s)
    if dist.active:
        check_distributed(cfg, dist.world, resume)
        check_same(dist, "config", json.dumps(config_to_dict(cfg), sort_keys=True))
    return dist


def shard_policy(dist: Dist, model: Any, device: str) -> tuple[Any, Any]:
    """(the model the update trains, the engine's unsharded copy or None). Under torchrun
    the policy is sharded with FSDP2 and the engine samples from a full copy, refreshed
    after every update (rlvr.training.loop.sync_sampler)."""
    if not dist.active:
        return model, None
    sampler = model
    trained = shard(copy.deepcopy(model), "cuda" if device.startswith("cuda") else "cpu",
                    dist.world)
    return trained, sampler


def recorded_paths(engine: Any, update: Any, cfg: TrainConfig) -> dict[str, str]:
    """The two seams as the run records them (every metrics line and summary.json): the
    decode forward and the update forward, each with why no faster one runs ("" when
    the fastest did). update/path itself is per step (what each update ran)."""
    rollout = rollout_path(engine)
    paths = {"rollout/path": rollout.name, "rollout/path_reason": rollout.reason,
             "rollout/path_prefix_reuse": prefix_reuse(engine),
             "update/path_reason": update.reason}
    if trainer_engine(cfg) != cfg.sampling.engine:  # K >= 1 with a vLLM server
        paths.update({"rollout/path": cfg.sampling.engine, "rollout/path_reason":
                      "the rollout producer's vLLM server samples; the trainer's hf "
                      "engine runs only the held-out evaluation",
                      "rollout/path_prefix_reuse": "the vLLM server's prefix caching"})
    return paths


def plain_update(cfg: TrainConfig) -> TrainConfig:
    """FSDP2 runs the plain update (the fast CPU paths are single-process)."""
    return replace(cfg, update=replace(cfg.update, path="plain"))


def _device_type(cfg: TrainConfig) -> str:
    return "cuda" if cfg.model.device.startswith("cuda") else "cpu"


def _headline(result: dict[str, Any]) -> str:
    """'0.425' and, with samples, ', pass@4 0.600, maj@4 0.480'."""
    row = result.get("row", {})
    extra = [f"{k} {v:.3f}" for k, v in row.items() if k.startswith(("pass@", "maj@"))]
    return ", ".join([f"{result['accuracy']:.3f}", *extra])


def _rl_steps(t: Trainer, run: RunDir, state: dict[str, Any], log_eval: HeldOutLog,
              progress: Progress, trackers: TrackerSet, guard: RunGuard) -> dict[str, Any]:
    cfg = t.cfg
    first = int(state.get("step", 0)) + 1
    # `elapsed` counts wall time across interruptions, `train_seconds` the training clock
    # (evaluations paused out): the checkpoint's, plus this session's.
    began = time.perf_counter() - state.get("elapsed", 0.0)
    clock = TrainingClock(state.get("train_seconds", 0.0))
    log_eval.clock, log_eval.wall_origin = clock, began
    if cfg.max_seconds and clock.seconds() >= cfg.max_seconds and first > 1:
        raise ResumeError(f"{run.path}: the run already spent its max_seconds="
                          f"{cfg.max_seconds:g} training seconds; give a larger max_seconds")
    schedule = EvalSchedule(cfg.eval.every, cfg.eval.every_s, clock.seconds())
    audit = LiveAudit(cfg.audit_every, run_verifier(cfg))
    last: dict[str, Any] = {}
    step = first - 1
    clock.start()
    for step in range(first, cfg.steps + 1):
        with peer_failures(t.dist, f"step {step}"):
            metrics, rollouts = rl_step(t, step)
        metrics["time/train_seconds"] = now = clock.seconds()  # the clock at this step's end
        final = step == cfg.steps or (bool(cfg.max_seconds) and now >= cfg.max_seconds)
        result: dict[str, Any] = {}
        if not final and schedule.due(step, now):
            result = log_eval(step)
            metrics["eval/accuracy"] = result.get("accuracy", float("nan"))
            if result:
                progress.message(f"held-out accuracy at step {step} "
                                 f"({now:.0f} training s): {_headline(result)}")
        final = guard.after_step(step, metrics, result, t) or final  # collapse: stop here
        for warning in audit.observe(step, rollouts, metrics):
            progress.message(warning)
        run.append_metrics(metrics)
        run.append_rollouts(rollouts)
        trackers.log_step(step, metrics, rollouts)  # TensorBoard, W&B, ... (logging.*)
        progress.step(metrics)
        last = metrics
        if final:
            break
        if cfg.checkpoint_every and step % cfg.checkpoint_every == 0:
            with peer_failures(t.dist, "checkpoint"):
                _checkpoint(t, run, step, {**state, "elapsed": time.perf_counter() - began,
                                           "train_seconds": clock.seconds()})
    progress.close()
    if step < cfg.steps:
        progress.message(f"max_seconds={cfg.max_seconds:g} reached after step {step}")
    after = result if guard.stopped and result else log_eval(step)  # not twice a step
    if after is not result:
        guard.evaluated(step, after, t)
    state.update(elapsed=time.perf_counter() - began, train_seconds=clock.seconds())
    _checkpoint(t, run, step, state)
    return {"eval": {"before": state.get("eval_before", {}), "after": after},
            "steps": step, "planned_steps": cfg.steps,
            "train_seconds": state["train_seconds"], "sft": state.get("sft", {"steps": 0}),
            "final_metrics": last,
            "checkpoint": str(latest_checkpoint(run.checkpoints)), **guard.summary()}
