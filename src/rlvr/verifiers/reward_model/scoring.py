"""Score (prompt, completion) pairs with a sequence-classification reward model.

One text per pair, rendered the way the policy saw it: with the tokenizer's chat
template when there is one (the prompt as the user turn, the generation prompt, then
the completion), else BOS + prompt + completion. `rlvr rm-train` trains through these
same functions and records the style in the model dir (META_FILE), so training and
scoring can never render differently.

The reward is the head's single logit (num_labels=1) at the last token. Batches are
padded on the left, so the last position is every row's real last token; position ids
count real tokens only, so a row's reward does not depend on how much padding its
batch needed. Texts too long are cut from the left: the end of the completion, where
the reward is read, always stays.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Sequence

import torch

META_FILE = "rlvr_reward_model.json"  # written by rlvr rm-train next to the weights
STYLES = ("auto", "chat", "plain")


def resolve_style(style: str, tokenizer: Any) -> str:
    """"auto" -> "chat" when the tokenizer has a chat template, else "plain"."""
    if style not in STYLES:
        raise ValueError(f"prompt style must be one of {', '.join(STYLES)}, got {style!r}")
    if style != "auto":
        return style
    return "chat" if getattr(tokenizer, "chat_template", None) else "plain"


def render(tokenizer: Any, prompt: str, completion: str, style: str) -> str:
    """The full text the reward model reads for one (prompt, completion)."""
    if style == "chat":
        head = tokenizer.apply_chat_template([{"role": "user", "content": prompt}],
                                             tokenize=False, add_generation_prompt=True)
        return head + completion
    return f"{getattr(tokenizer, 'bos_token', None) or ''}{prompt}{completion}"


def prepare_tokenizer(tokenizer: Any, model: Any) -> None:
    """Left padding and truncation, and a pad id the model knows: a sequence-
    classification head needs one to batch (any id will do: padding is masked)."""
    tokenizer.padding_side = "left"
    tokenizer.truncation_side = "left"
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    model.config.pad_token_id = tokenizer.pad_token_id


def encode(tokenizer: Any, texts: Sequence[str], max_length: int,
           device: torch.device | str) -> dict[str, torch.Tensor]:
    """input_ids, attention_mask, position_ids: each [B, T], left-padded. Rendered texts
    are complete (BOS included where wanted), so no special tokens are added."""
    batch = tokenizer(list(texts), return_tensors="pt", padding=True, truncation=True,
                      max_length=max_length, add_special_tokens=False)
    mask = batch["attention_mask"]  # [B, T]
    positions = (mask.cumsum(-1) - 1).clamp(min=0)  # [B, T]: 0 at each row's first real token
    return {"input_ids": batch["input_ids"].to(device), "attention_mask": mask.to(device),
            "position_ids": positions.to(device)}


def rewards_of(model: Any, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """[B] float32 rewards: the head's logit at each row's last token."""
    logits = model(**batch).logits  # [B, 1]
    return logits[:, 0].float()


def score_texts(model: Any, tokenizer: Any, texts: Sequence[str], max_length: int,
                batch_size: int) -> torch.Tensor:
    """[N] rewards of `texts`, without gradients, in batches; the model's mode kept (the
    verifier's model stays in eval mode, rm-train's returns to training)."""
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    out = []
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            batch = encode(tokenizer, texts[start:start + batch_size], max_length, device)
            out.append(rewards_of(model, batch).cpu())
    model.train(was_training)
    return torch.cat(out) if out else torch.zeros(0)


def read_meta(directory: str | Path) -> dict[str, Any]:
    """The JSON rm-train saved with the model ({} for a model dir without one)."""
    path = Path(directory) / META_FILE
    if not path.is_file():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))


class RewardScorer:
    """A reward model loaded once, scoring many (prompt, completion) pairs in batches."""

    def __init__(self, directory: str | Path, device: str = "cpu", max_length: int = 512,
                 batch_size: int = 16, style: str = "") -> None:
        from transformers import AutoModelForSequenceClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        self.meta = read_meta(directory)
        self.device = torch.device(_auto(device))
        self.tokenizer = AutoTokenizer.from_pretrained(directory)
        self.model = AutoModelForSequenceClassification.from_pretrained(
            directory, num_labels=1).to(self.device).eval()
        prepare_tokenizer(self.tokenizer, self.model)
        # the style training used wins over "auto": scoring must render as training did
        self.style = resolve_style(style or self.meta.get("prompt_style", "auto"),
                                   self.tokenizer)
        self.max_length, self.batch_size = max_length, batch_size

    def score(self, prompts: Sequence[str], completions: Sequence[str]) -> list[float]:
        """Raw rewards, one per (prompt, completion), in order."""
        texts = [render(self.tokenizer, p, c, self.style) for p, c in zip(prompts, completions)]
        return score_texts(self.model, self.tokenizer, texts, self.max_length,
                           self.batch_size).tolist()


def _auto(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return device
