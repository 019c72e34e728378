"""Build what a run needs from its config: device, policy + tokenizer, data, prompts."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from rlvr.config import ConfigError
from rlvr.data.arithmetic import ArithmeticTask
from rlvr.data.loading import DataError, load_records
from rlvr.data.prompts import PromptRenderer, resolve_style
from rlvr.data.records import TaskRecord
from rlvr.training.config import DataConfig, ModelConfig, PromptConfig, TrainConfig
from rlvr.training.tiny import TinyModelSpec, char_tokenizer, tiny_llama

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def every_core() -> int:
    """Cores this process may run on (its CPU affinity, which containers and taskset
    narrow), or fewer where OMP_NUM_THREADS says so: the operator's own limit (two
    processes sharing the cores, such as the test suite's two workers). torch's own
    default counts physical cores: fewer than the vCPUs of a hyperthreaded machine."""
    cores = max(1, len(os.sched_getaffinity(0)))
    limit = os.environ.get("OMP_NUM_THREADS", "").strip()
    return min(cores, int(limit)) if limit.isdigit() and int(limit) > 0 else cores


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def check_model_path(cfg: ModelConfig) -> None:
    """Resolve model.path now, so a missing model fails before any work, naming the field
    (resolving is cached: load_policy finds the same directory)."""
    if not cfg.path:
        return
    from rlvr.models import resolve_model
    from rlvr.models.resolve import ModelNotFound

    try:
        resolve_model(cfg.path)
    except ModelNotFound as exc:
        raise ConfigError(str(exc), "model.path") from None


def load_policy(cfg: ModelConfig, seed: int, path: str | Path | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) from `path` (a checkpoint), else cfg.path, else a fresh tiny Llama.
    A LoRA checkpoint (an adapter dir) is attached to the base model of cfg; a fresh
    model gets new adapters when cfg.lora.enabled."""
    from transformers.utils import logging as hf_logging

    from rlvr.models.lora import apply_lora, is_adapter_dir

    hf_logging.disable_progress_bar()  # no "Writing model shards" bars at every checkpoint
    torch.set_num_threads(cfg.threads if cfg.threads > 0 else every_core())
    if path is not None and is_adapter_dir(path):
        model, tokenizer = _adapter_policy(cfg, seed, Path(path))
    else:
        model, tokenizer = _base_policy(cfg, seed, path)
        if cfg.lora.enabled:
            model = apply_lora(model, cfg.lora)
    if cfg.gradient_checkpointing:
        # Non-reentrant checkpointing needs no input grads, so frozen embeddings (LoRA) work.
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if tokenizer.pad_token_id is None:  # padding positions are masked; any id will do
        tokenizer.pad_token = tokenizer.eos_token
    return model.to(pick_device(cfg.device)), tokenizer


def _base_policy(cfg: ModelConfig, seed: int, path: str | Path | None) -> tuple[Any, Any]:
    """A full model from `path` or cfg.path (anything `resolve_model` takes), else the
    tiny Llama, which `seed` rebuilds identically (the base of a tiny LoRA run)."""
    source = path or cfg.path
    if source:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from rlvr.models import resolve_model

        directory = resolve_model(source)
        tokenizer = AutoTokenizer.from_pretrained(directory)
        model = AutoModelForCausalLM.from_pretrained(directory, dtype=_DTYPES[cfg.dtype])
        return model, tokenizer
    tokenizer = char_tokenizer()
    t = cfg.tiny
    model = tiny_llama(tokenizer, TinyModelSpec(t.hidden_size, t.intermediate_size,
                                                t.num_layers, t.num_heads,
                                                t.max_positions), seed)
    return model.to(_DTYPES[cfg.dtype]), tokenizer


def _adapter_policy(cfg: ModelConfig, seed: int, adapter_dir: Path) -> tuple[Any, Any]:
    """The base model of cfg with the (trainable) adapter saved at `adapter_dir`."""
    from rlvr.models.lora import attach_adapter

    model, tokenizer = _base_policy(cfg, seed, None)
    if (adapter_dir / "tokenizer_config.json").is_file():
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(adapter_dir)
    return attach_adapter(model, adapter_dir, trainable=True), tokenizer


def arithmetic_task(cfg: DataConfig) -> ArithmeticTask:
    a = cfg.arithmetic
    return ArithmeticTask(min_digits=a.min_digits, max_digits=a.max_digits, ops=tuple(a.ops),
                          template=a.template, verifier=cfg.default_verifier)


def load_data(cfg: DataConfig, seed: int) -> tuple[list[TaskRecord], list[TaskRecord]]:
    """(training records, held-out records). The arithmetic task's splits never overlap.
    A path that cannot be read raises DataError naming the field."""
    if cfg.path:
        train = _records(cfg, "path")
        held_out = _records(cfg, "eval_path") if cfg.eval_path else []
    else:
        task = arithmetic_task(cfg)
        train = task.generate(cfg.arithmetic.train_size, "train", seed)
        held_out = (_records(cfg, "eval_path") if cfg.eval_path
                    else task.generate(cfg.eval_size, "test", seed))
    if cfg.eval_size > 0:
        held_out = held_out[:cfg.eval_size]
    return train, held_out


def _records(cfg: DataConfig, field: str) -> list[TaskRecord]:
    """The records of data.<field> (path or eval_path)."""
    from rlvr.data.sources import resolve_data_path

    try:
        path = resolve_data_path(getattr(cfg, field))
    except FileNotFoundError as exc:  # e.g. ${RLVR_SHARED_DATA} with no shared data
        raise DataError(f"data.{field}: {exc}") from None
    return load_records(path, cfg.mapping, default_verifier=cfg.default_verifier)


def prompt_renderer(cfg: PromptConfig, tokenizer: Any) -> PromptRenderer:
    return PromptRenderer(tokenizer, resolve_style(cfg.style, tokenizer), cfg.template,
                          cfg.system_prompt, cfg.instruction)


def engine_options(cfg: TrainConfig) -> Any:
    """The rollout engine's settings (rlvr.rollout.factory.EngineOptions) from the config."""
    from rlvr.rollout.factory import EngineOptions

    from dataclasses import asdict

    s = cfg.sampling
    # plain values: the engine module (and vllm) is imported only when the engine is built
    vllm = {**asdict(s.vllm), "seed": cfg.seed, "prefix_caching": s.reuse_prefix}
    return EngineOptions(s.max_batch_rows, s.fast_decode, s.activation_memory_gb, vllm,
                         s.reuse_prefix, s.prefix_memory_gb)
