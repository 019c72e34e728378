"""LoRA through peft: wrap a causal LM, save only the adapter, merge it back.

Checkpoints of a LoRA run hold the adapter (adapter_config.json + weights), not a copy
of the base model; `merge_lora` (and `rlvr merge-lora`) folds the adapter into the base
weights and writes a plain HF model dir that loads without peft.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass
class LoraConfig:
    enabled: bool = field(default=False, metadata={"help": "train LoRA adapters instead of "
                                                   "all weights"})
    rank: int = field(default=16, metadata={"help": "adapter rank r"})
    alpha: float = field(default=32.0, metadata={"help": "scaling numerator: updates are "
                                                 "scaled by alpha / rank"})
    dropout: float = field(default=0.0, metadata={"help": "dropout on the adapter input"})
    target_modules: list[str] = field(default_factory=lambda: list(DEFAULT_TARGETS),
                                      metadata={"help": "module names to adapt (suffix "
                                                "match), or ['all-linear']"})

    def validate(self) -> None:
        from rlvr.config import ConfigError

        if self.rank < 1:
            raise ConfigError("must be >= 1", "rank")
        if not 0.0 <= self.dropout < 1.0:
            raise ConfigError("must be in [0, 1)", "dropout")
        if not self.target_modules:
            raise ConfigError("name at least one module", "target_modules")


def _peft() -> Any:
    try:
        import peft
    except ImportError:
        raise ImportError("LoRA needs peft: pip install 'rlvr[lora]' (or pip install peft)") \
            from None
    return peft


def apply_lora(model: Any, config: LoraConfig) -> Any:
    """`model` wrapped with trainable adapters; base weights frozen."""
    peft = _peft()
    targets: Any = config.target_modules
    if list(targets) == ["all-linear"]:
        targets = "all-linear"
    else:
        present = {name.rsplit(".", 1)[-1] for name, _ in model.named_modules()}
        targets = [t for t in targets if t in present]
        if not targets:
            raise ValueError(f"none of the LoRA target modules {config.target_modules} exist in "
                             f"this model (it has e.g. {sorted(present)[:12]})")
    lora = peft.LoraConfig(r=config.rank, lora_alpha=config.alpha, lora_dropout=config.dropout,
                           target_modules=targets, task_type="CAUSAL_LM")
    return peft.get_peft_model(model, lora)


def is_adapter_dir(path: str | Path) -> bool:
    return (Path(path) / "adapter_config.json").is_file()


def load_with_adapter(base_dir: str | Path, adapter_dir: str | Path, trainable: bool = False,
                      **model_kwargs: Any) -> Any:
    """The base model with the adapter at `adapter_dir` attached."""
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(base_dir, **model_kwargs)
    return attach_adapter(base, adapter_dir, trainable)


def attach_adapter(base: Any, adapter_dir: str | Path, trainable: bool = False) -> Any:
    """`base` (a loaded causal LM) wrapped with the adapter saved at `adapter_dir`."""
    return _peft().PeftModel.from_pretrained(base, str(adapter_dir), is_trainable=trainable)


def merge_lora(adapter_dir: str | Path, out_dir: str | Path,
               base_dir: str | Path | None = None) -> Path:
    """Fold the adapter into its base model and save a plain HF model dir at `out_dir`.
    The base defaults to the one recorded in adapter_config.json."""
    import json

    from transformers import AutoTokenizer

    adapter_dir = Path(adapter_dir)
    if not is_adapter_dir(adapter_dir):
        raise FileNotFoundError(f"{adapter_dir}: no adapter_config.json (not a LoRA adapter)")
    if base_dir is None:
        base_dir = json.loads((adapter_dir / "adapter_config.json").read_text()
                              )["base_model_name_or_path"]
    if not Path(str(base_dir)).is_dir():
        raise FileNotFoundError(f"base model {base_dir} not found; pass it explicitly")
    merged = load_with_adapter(base_dir, adapter_dir).merge_and_unload()
    out = Path(out_dir)
    merged.save_pretrained(out)
    tokenizer_source = adapter_dir if (adapter_dir / "tokenizer_config.json").is_file() \
        else Path(str(base_dir))
    if (tokenizer_source / "tokenizer_config.json").is_file():
        AutoTokenizer.from_pretrained(tokenizer_source).save_pretrained(out)
    return out
