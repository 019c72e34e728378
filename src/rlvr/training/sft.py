"""Supervised warm-start: teach the policy the answer format from worked examples.

Loss is next-token cross-entropy on the completion only (prompt tokens are masked),
AdamW with linear warmup. Examples are drawn with a seeded RNG, so a warm-start is
reproducible.
"""

from __future__ import annotations

import random
import time
from typing import Any, Callable, Sequence

import torch

from rlvr.data.prompts import PromptRenderer
from rlvr.data.records import TaskRecord
from rlvr.data.worked import column_addition
from rlvr.training.config import SFTConfig
from rlvr.training.optim import build_optimizer, build_scheduler, release_gradients


def worked_example(record: TaskRecord, cfg: SFTConfig, rng: random.Random) -> str:
    """The completion to imitate for `record`: a column-addition worked solution for the
    arithmetic task's "+" problems (with the configured sloppiness), else the target
    template filled from the reference and metadata."""
    meta = record.metadata
    if cfg.worked_solutions and meta.get("op") == "+" and "a" in meta and "b" in meta:
        return column_addition(int(meta["a"]), int(meta["b"]), rng, cfg.forget_carry)
    return cfg.target_template.format(reference=record.reference, **meta)


def _encode(tokenizer: Any, prompt: str, completion: str) -> tuple[list[int], int]:
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    completion_ids = tokenizer(completion, add_special_tokens=False)["input_ids"]
    if tokenizer.eos_token_id is not None:
        completion_ids = completion_ids + [tokenizer.eos_token_id]
    return prompt_ids + completion_ids, len(prompt_ids)


def sft_batch(tokenizer: Any, pairs: Sequence[tuple[str, str]],
              device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, attention_mask, labels) [B, L], right-padded; labels -100 off-completion."""
    encoded = [_encode(tokenizer, p, c) for p, c in pairs]
    width = max(len(ids) for ids, _ in encoded)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    ids = torch.full((len(encoded), width), pad, dtype=torch.long)
    attention = torch.zeros_like(ids)
    labels = torch.full_like(ids, -100)
    for i, (row, prompt_len) in enumerate(encoded):
        ids[i, :len(row)] = torch.tensor(row)
        attention[i, :len(row)] = 1
        labels[i, prompt_len:len(row)] = ids[i, prompt_len:len(row)]
    return ids.to(device), attention.to(device), labels.to(device)


def supervised_warmstart(model: Any, tokenizer: Any, renderer: PromptRenderer,
                         records: Sequence[TaskRecord], cfg: SFTConfig, seed: int,
                         on_step: Callable[[dict[str, float]], None] = lambda _: None,
                         examples: Callable[[TaskRecord, str], list[tuple[str, str]]]
                         | None = None,
                         ) -> dict[str, float]:
    """Run `cfg.steps` SFT steps on `records`; returns {"steps", "loss", "seconds"}.
    `on_step` gets {"step" (1-based), "loss", "time/step"} after every step (a display
    decides which to show: rlvr.runs.Progress). `examples(record, completion)` gives a
    record's (prompt, completion) pairs (default: the rendered prompt and the
    completion; rlvr.training.sft_prompts), so a step holds batch_size records."""
    if cfg.steps <= 0:
        return {"steps": 0}
    device = next(model.parameters()).device
    rng = random.Random(seed)
    examples = examples or (lambda record, completion: [(renderer.render(record), completion)])
    optimizer = build_optimizer(model, cfg.lr, 0.0, (0.9, 0.99))
    scheduler = build_scheduler(optimizer, cfg.warmup_steps, cfg.steps, "constant", 1.0)
    model.train()
    start, loss_value = time.perf_counter(), float("nan")
    for step in range(cfg.steps):
        began = time.perf_counter()
        chosen = [records[rng.randrange(len(records))] for _ in range(cfg.batch_size)]
        pairs = [p for r in chosen for p in examples(r, worked_example(r, cfg, rng))]
        ids, attention, labels = sft_batch(tokenizer, pairs, device)
        loss = model(input_ids=ids, attention_mask=attention, labels=labels).loss
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        loss_value = float(loss.detach())
        on_step({"step": step + 1, "loss": loss_value,
                 "time/step": time.perf_counter() - began})
    release_gradients(optimizer)  # the RL update makes its own
    model.eval()
    return {"steps": cfg.steps, "loss": loss_value, "seconds": time.perf_counter() - start}
