"""Build what a run needs from its config: device, policy + tokenizer, data, prompts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from rlvr.data.arithmetic import ArithmeticTask
from rlvr.data.loading import load_records
from rlvr.data.prompts import PromptRenderer
from rlvr.data.records import TaskRecord
from rlvr.training.config import DataConfig, ModelConfig, PromptConfig
from rlvr.training.tiny import TinyModelSpec, char_tokenizer, tiny_llama

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def pick_device(name: str) -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def load_policy(cfg: ModelConfig, seed: int, path: str | Path | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) from `path` (a checkpoint), else cfg.path, else a fresh tiny Llama."""
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # no "Writing model shards" bars at every checkpoint
    if cfg.threads > 0:
        torch.set_num_threads(cfg.threads)
    source = path or cfg.path
    if source:
        from rlvr.models import resolve_model

        directory = resolve_model(source)
        tokenizer = AutoTokenizer.from_pretrained(directory)
        model = AutoModelForCausalLM.from_pretrained(directory, dtype=_DTYPES[cfg.dtype])
    else:
        tokenizer = char_tokenizer()
        t = cfg.tiny
        model = tiny_llama(tokenizer, TinyModelSpec(t.hidden_size, t.intermediate_size,
                                                    t.num_layers, t.num_heads,
                                                    t.max_positions), seed)
        model = model.to(_DTYPES[cfg.dtype])
    if tokenizer.pad_token_id is None:  # padding positions are masked; any id will do
        tokenizer.pad_token = tokenizer.eos_token
    return model.to(pick_device(cfg.device)), tokenizer


def arithmetic_task(cfg: DataConfig) -> ArithmeticTask:
    a = cfg.arithmetic
    return ArithmeticTask(min_digits=a.min_digits, max_digits=a.max_digits, ops=tuple(a.ops),
                          template=a.template, verifier=cfg.default_verifier)


def load_data(cfg: DataConfig, seed: int) -> tuple[list[TaskRecord], list[TaskRecord]]:
    """(training records, held-out records). The arithmetic task's splits never overlap."""
    if cfg.path:
        train = load_records(cfg.path, cfg.mapping, default_verifier=cfg.default_verifier)
        held_out = (load_records(cfg.eval_path, cfg.mapping,
                                 default_verifier=cfg.default_verifier)
                    if cfg.eval_path else [])
    else:
        task = arithmetic_task(cfg)
        train = task.generate(cfg.arithmetic.train_size, "train", seed)
        held_out = (load_records(cfg.eval_path, cfg.mapping,
                                 default_verifier=cfg.default_verifier)
                    if cfg.eval_path else task.generate(cfg.eval_size, "test", seed))
    if cfg.eval_size > 0:
        held_out = held_out[:cfg.eval_size]
    return train, held_out


def prompt_renderer(cfg: PromptConfig, tokenizer: Any) -> PromptRenderer:
    return PromptRenderer(tokenizer, cfg.style, cfg.template, cfg.system_prompt,
                          cfg.instruction)
