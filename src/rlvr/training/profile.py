"""Config profiles: the defaults that suit the run, chosen by what `model.path` names.

The dataclass defaults in rlvr.training.config are the embedded demo's (a tiny
character-level Llama that must be warm-started, a large learning rate, 28 new tokens,
one thread on the CPU). They are wrong for a real model, so once `model.path` is set
the "real_model" profile replaces some of them:

    sft.steps                0      an instruct model needs no warm-start; the demo's
                                    targets ("#### {reference}") would teach a format
    prompt.style             auto   chat when the tokenizer has a chat template, else plain
    model.device             auto   cuda when available, else cpu
    model.threads            0      every core this process may use
    optim.lr                 1e-6   full fine-tuning (2e-5 with model.lora.enabled)
    sampling.max_new_tokens  512    room to reason before the answer

`profile=demo` keeps the demo's defaults for a model of your own (e.g. a tiny model saved
by `rlvr sft`); `profile=real_model` forces the other. A field the user set, in the YAML
file or as an override, always keeps the user's value: the loader hands
`profile_defaults` what the user wrote, before any default is filled in
(rlvr.config.loader: dataclass defaults < profile defaults < YAML < overrides).
`config_warnings` names settings that quietly ruin a run, such as a demo-sized learning
rate on a real model; `rlvr train` prints them, and the defaults it filled in.
"""

from __future__ import annotations

from typing import Any

from rlvr.training.config import TrainConfig

DEMO, REAL_MODEL = "demo", "real_model"

# dotted field -> default under the real-model profile (see the module docstring)
REAL_MODEL_DEFAULTS: dict[str, Any] = {
    "sft.steps": 0,
    "prompt.style": "auto",
    "model.device": "auto",
    "model.threads": 0,
    "optim.lr": 1e-6,
    "sampling.max_new_tokens": 512,
}
REAL_MODEL_LORA_LR = 2e-5  # adapters train a small fraction of the weights: a larger step
FULL_FINETUNE_MAX_LR = 1e-4  # above this a full fine-tune of a real model usually diverges


def _get(data: Any, dotted: str) -> tuple[bool, Any]:
    """(present, value) of a dotted field in the user's nested data."""
    node = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _nest(flat: dict[str, Any]) -> dict[str, Any]:
    nested: dict[str, Any] = {}
    for dotted, value in flat.items():
        *sections, name = dotted.split(".")
        node = nested
        for section in sections:
            node = node.setdefault(section, {})
        node[name] = value
    return nested


def profile_name(data: dict[str, Any]) -> str:
    """The profile the user's data selects: its `profile` when that is "demo" or
    "real_model"; else (auto) "real_model" when model.path is non-empty, "demo" otherwise."""
    chosen = data.get("profile", "auto")
    if chosen in (DEMO, REAL_MODEL):
        return chosen
    _, path = _get(data, "model.path")
    return REAL_MODEL if isinstance(path, str) and path.strip() else DEMO


def applied_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """Dotted field -> profile default, for the fields the profile sets because the user
    did not (empty for the demo profile)."""
    if profile_name(data) == DEMO:
        return {}
    defaults = dict(REAL_MODEL_DEFAULTS)
    if _get(data, "model.lora.enabled")[1] is True:
        defaults["optim.lr"] = REAL_MODEL_LORA_LR
    return {name: value for name, value in defaults.items() if not _get(data, name)[0]}


def profile_defaults(data: dict[str, Any]) -> dict[str, Any]:
    """The loader's hook (TrainConfig.profile_defaults): the profile's defaults as nested
    data, for the fields the user did not set."""
    return _nest(applied_defaults(data))


def config_warnings(cfg: TrainConfig) -> list[str]:
    """Settings that load fine but quietly ruin a real-model run, one sentence each."""
    if not cfg.model.path:
        return []
    warnings = []
    if not cfg.model.lora.enabled and cfg.optim.lr > FULL_FINETUNE_MAX_LR:
        warnings.append(f"optim.lr={cfg.optim.lr:g} fully fine-tunes a real model with a "
                        f"step above {FULL_FINETUNE_MAX_LR:g}, which usually wrecks it within "
                        "a few steps (try 1e-6..1e-5, or model.lora.enabled=true)")
    if cfg.sft.steps > 0 and cfg.sft.target_template == "#### {reference}":
        warnings.append(f"sft.steps={cfg.sft.steps} warm-starts a real model on bare "
                        "'#### {reference}' targets, which teaches it to answer without "
                        "reasoning (set sft.steps=0, or an sft.target_template of your own)")
    return warnings
