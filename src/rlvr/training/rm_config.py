"""`rlvr rm-train`'s typed config, declared once (fields documented where declared;
`rlvr rm-train --describe` lists them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rlvr.config import ConfigError
from rlvr.training.config import _doc


@dataclass
class RMModelConfig:
    path: str = _doc("backbone: HF model dir, .gguf file or packaged alias (e.g. "
                     "smollm2-135m-instruct); a sequence-classification head with one "
                     "output is put on it. Empty: the tiny character-level Llama",
                     default="")
    device: str = _doc("torch device: cpu, cuda, cuda:1 ... or auto", default="cpu")
    dtype: Literal["float32", "bfloat16", "float16"] = _doc("parameter dtype",
                                                             default="float32")
    threads: int = _doc("torch CPU threads (0 = every core this process may use)",
                        default=0)


@dataclass
class RMDataConfig:
    path: str = _doc("preference pairs: JSONL/JSON/Parquet rows {prompt, chosen, "
                     "rejected}", default="")
    eval_path: str = _doc("held-out pairs (empty: hold out eval_fraction of path's pairs, "
                          "whole prompts at a time)", default="")
    eval_fraction: float = _doc("share of pairs held out when eval_path is empty",
                                default=0.1)
    limit: int = _doc("read at most N pairs from path (0 = all)", default=0)

    def validate(self) -> None:
        if not self.path:
            raise ConfigError("give the preference pairs (data.path=pairs.jsonl)", "path")
        if not 0.0 < self.eval_fraction < 1.0:
            raise ConfigError("must be in (0, 1)", "eval_fraction")


@dataclass
class RMTrainingConfig:
    epochs: int = _doc("passes over the training pairs", default=1)
    max_steps: int = _doc("stop after N optimizer steps (0 = the epochs decide)", default=0)
    batch_size: int = _doc("pairs per step (each pair is two sequences)", default=8)
    eval_batch_size: int = _doc("sequences per forward when scoring", default=32)
    lr: float = _doc("AdamW learning rate (constant)", default=1e-5)
    weight_decay: float = _doc("AdamW weight decay", default=0.0)
    grad_clip: float = _doc("max global grad norm (0 = no clipping)", default=1.0)
    max_length: int = _doc("tokens read per prompt + completion (longer: the start is cut)",
                           default=512)
    prompt_style: Literal["auto", "chat", "plain"] = _doc(
        "chat: the tokenizer's chat template (prompt as the user turn); plain: BOS + "
        "prompt + completion; auto: chat when the tokenizer has a template. Saved with "
        "the model, so the reward_model verifier renders the same way", default="auto")

    def validate(self) -> None:
        for name in ("epochs", "batch_size", "eval_batch_size", "max_length"):
            if getattr(self, name) < 1:
                raise ConfigError("must be >= 1", name)
        if self.max_steps < 0:
            raise ConfigError("must be >= 0", "max_steps")
        if self.lr <= 0:
            raise ConfigError("must be > 0", "lr")


@dataclass
class RMTrainConfig:
    name: str = _doc("run name (the default run dir is runs/NAME-TIMESTAMP)", default="rm")
    seed: int = _doc("seed for the head's init, the split and the pair order", default=0)
    log_every: int = _doc("progress when stderr is not a terminal: a line every N steps",
                          default=10)
    model: RMModelConfig = _doc("backbone", default_factory=RMModelConfig)
    data: RMDataConfig = _doc("preference pairs", default_factory=RMDataConfig)
    train: RMTrainingConfig = _doc("optimisation", default_factory=RMTrainingConfig)

    def validate(self) -> None:
        # Sections left at their defaults are not validated by the loader; check them
        # here so `rlvr rm-train` with no data.path fails naming the field.
        for section in ("data", "train"):
            try:
                getattr(self, section).validate()
            except ConfigError as exc:
                raise ConfigError(exc.bare_message, f"{section}.{exc.field}") from None
