"""Train a Bradley-Terry reward model on preference pairs (`rlvr rm-train`).

The backbone gets a sequence-classification head with one output (the reward, read at
the last token; rlvr.verifiers.reward_model.scoring renders, pads and reads it, the
same code the verifier scores with). Each step scores a batch of pairs' chosen and
rejected completions in one forward and takes an AdamW step on the Bradley-Terry loss
-log sigmoid(r_chosen - r_rejected) (rlvr.algorithms.bradley_terry_loss). Pairwise
accuracy on the held-out pairs is measured before and after; the training set's reward
mean and std are saved with the model for the verifier's `standard` normalisation.
"""

from __future__ import annotations

import json
import math
import random
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import torch

from rlvr.algorithms import bradley_terry_loss, pairwise_accuracy
from rlvr.training.preference_data import PreferencePair
from rlvr.training.rm_config import RMModelConfig, RMTrainingConfig
from rlvr.verifiers.reward_model.scoring import (META_FILE, encode, prepare_tokenizer,
                                                 render, resolve_style, rewards_of,
                                                 score_texts)

_DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def load_reward_backbone(cfg: RMModelConfig, seed: int) -> tuple[Any, Any]:
    """(model with a fresh 1-output head, tokenizer) on cfg.device. The head's init is
    seeded, so a run is reproducible; an empty path builds the tiny Llama."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from rlvr.models import resolve_model
    from rlvr.training.setup import every_core, pick_device

    hf_logging.disable_progress_bar()
    torch.set_num_threads(cfg.threads if cfg.threads > 0 else every_core())
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        if cfg.path:
            directory = resolve_model(cfg.path)
            tokenizer = AutoTokenizer.from_pretrained(directory)
            # the causal LM head is dropped; the "newly initialized score" notice is expected
            verbosity = hf_logging.get_verbosity()
            hf_logging.set_verbosity_error()
            try:
                model = AutoModelForSequenceClassification.from_pretrained(
                    directory, num_labels=1, dtype=_DTYPES[cfg.dtype])
            finally:
                hf_logging.set_verbosity(verbosity)
        else:
            model, tokenizer = _tiny_reward_model(seed)
    prepare_tokenizer(tokenizer, model)
    return model.to(_DTYPES[cfg.dtype]).to(pick_device(cfg.device)), tokenizer


def _tiny_reward_model(seed: int) -> tuple[Any, Any]:
    from transformers import LlamaForSequenceClassification

    from rlvr.training.tiny import char_tokenizer, tiny_llama

    tokenizer = char_tokenizer()
    config = tiny_llama(tokenizer, seed=seed).config
    config.num_labels = 1
    return LlamaForSequenceClassification(config), tokenizer


class PairTexts:
    """The rendered chosen and rejected texts of a list of pairs."""

    def __init__(self, tokenizer: Any, pairs: Sequence[PreferencePair], style: str) -> None:
        self.chosen = [render(tokenizer, p.prompt, p.chosen, style) for p in pairs]
        self.rejected = [render(tokenizer, p.prompt, p.rejected, style) for p in pairs]

    def __len__(self) -> int:
        return len(self.chosen)


def evaluate_pairs(model: Any, tokenizer: Any, texts: PairTexts, max_length: int,
                   batch_size: int) -> dict[str, float]:
    """Pairwise accuracy (ties half), mean margin and Bradley-Terry loss over `texts`."""
    chosen = score_texts(model, tokenizer, texts.chosen, max_length, batch_size)  # [N]
    rejected = score_texts(model, tokenizer, texts.rejected, max_length, batch_size)  # [N]
    return {"pairs": len(texts), "accuracy": pairwise_accuracy(chosen, rejected),
            "margin": float((chosen - rejected).mean()),
            "loss": float(bradley_terry_loss(chosen, rejected))}


def reward_stats(model: Any, tokenizer: Any, texts: PairTexts, max_length: int,
                 batch_size: int) -> dict[str, float]:
    """Mean and std of the rewards of every training completion (chosen and rejected):
    the `standard` normalisation's reference."""
    rewards = score_texts(model, tokenizer, texts.chosen + texts.rejected, max_length,
                          batch_size)  # [2N]
    std = float(rewards.std()) if len(rewards) > 1 else 0.0
    return {"mean": float(rewards.mean()), "std": std if std > 0 else 1.0,
            "count": len(rewards)}


def train_steps(model: Any, tokenizer: Any, texts: PairTexts, cfg: RMTrainingConfig,
                seed: int, on_step: Callable[[dict[str, float]], None] = lambda _: None
                ) -> dict[str, float]:
    """AdamW on the Bradley-Terry loss over shuffled batches of pairs; returns
    {"steps", "loss" (last step), "seconds"}. `on_step` gets each step's metrics."""
    device = next(model.parameters()).device
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad],
                                  lr=cfg.lr, weight_decay=cfg.weight_decay)
    batches = _batches(len(texts), cfg, seed)
    model.train()
    began, loss = time.perf_counter(), torch.tensor(math.nan)
    for step, indices in enumerate(batches, start=1):
        t0 = time.perf_counter()
        both = [texts.chosen[i] for i in indices] + [texts.rejected[i] for i in indices]
        rewards = rewards_of(model, encode(tokenizer, both, cfg.max_length, device))  # [2B]
        chosen, rejected = rewards[:len(indices)], rewards[len(indices):]  # [B], [B]
        loss = bradley_terry_loss(chosen, rejected)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if cfg.grad_clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimizer.step()
        on_step({"step": step, "loss": loss.item(),
                 "accuracy": pairwise_accuracy(chosen.detach(), rejected.detach()),
                 "time/step": time.perf_counter() - t0})
    model.eval()
    return {"steps": len(batches), "loss": loss.item(),
            "seconds": time.perf_counter() - began}


def _batches(n: int, cfg: RMTrainingConfig, seed: int) -> list[list[int]]:
    """Pair indices per step: each epoch a fresh seeded shuffle cut into batches (the last
    one may be short); cut at max_steps when it is set."""
    rng, out = random.Random(seed), []
    for _ in range(cfg.epochs):
        order = list(range(n))
        rng.shuffle(order)
        out.extend(order[i:i + cfg.batch_size] for i in range(0, n, cfg.batch_size))
    return out[:cfg.max_steps] if cfg.max_steps else out


def total_steps(n: int, cfg: RMTrainingConfig) -> int:
    per_epoch = math.ceil(n / cfg.batch_size)
    steps = per_epoch * cfg.epochs
    return min(steps, cfg.max_steps) if cfg.max_steps else steps


def save_reward_model(model: Any, tokenizer: Any, directory: Path,
                      meta: dict[str, Any]) -> Path:
    """The HF dir (weights, config, tokenizer) plus META_FILE: prompt style, statistics,
    evaluation. `AutoModelForSequenceClassification.from_pretrained` loads it."""
    directory.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    (directory / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return directory


def train_reward_model(model: Any, tokenizer: Any, train: Sequence[PreferencePair],
                       held_out: Sequence[PreferencePair], cfg: RMTrainingConfig, seed: int,
                       on_step: Callable[[dict[str, float]], None] = lambda _: None
                       ) -> dict[str, Any]:
    """Evaluate, train, evaluate, measure the training rewards; returns the metadata to
    save with the model (prompt_style, max_length, stats, eval before/after, train)."""
    style = resolve_style(cfg.prompt_style, tokenizer)
    train_texts = PairTexts(tokenizer, train, style)
    eval_texts = PairTexts(tokenizer, held_out, style)
    before = evaluate_pairs(model, tokenizer, eval_texts, cfg.max_length, cfg.eval_batch_size)
    trained = train_steps(model, tokenizer, train_texts, cfg, seed, on_step)
    after = evaluate_pairs(model, tokenizer, eval_texts, cfg.max_length, cfg.eval_batch_size)
    stats = reward_stats(model, tokenizer, train_texts, cfg.max_length, cfg.eval_batch_size)
    return {"format": 1, "prompt_style": style, "max_length": cfg.max_length,
            "stats": stats, "eval": {"before": before, "after": after},
            "train": {**trained, "pairs": len(train)}}
