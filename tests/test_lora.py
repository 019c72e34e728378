"""LoRA: training moves only adapter weights; merging reproduces the adapted outputs."""

from __future__ import annotations

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

from cli_helpers import run_cli
from rlvr.config import ConfigError, load_config
from rlvr.models.lora import LoraConfig, apply_lora, is_adapter_dir

pytest.importorskip("peft", reason="LoRA needs the peft extra")


def _tiny_model(tmp_path):
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=40, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = LlamaForCausalLM(config)
    model.save_pretrained(tmp_path / "base")
    return model


def test_training_changes_only_adapter_weights_and_merge_matches(tmp_path):
    model = apply_lora(_tiny_model(tmp_path), LoraConfig(enabled=True, rank=4, alpha=8))
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    ids = torch.randint(0, 40, (2, 12))
    for _ in range(3):
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    for name, param in model.named_parameters():
        changed = not torch.equal(before[name], param.detach())
        if name in trainable and "lora_B" in name:
            assert changed, name  # B starts at zero, so any update shows
        if name not in trainable:
            assert not changed, name
    model.eval()
    with torch.no_grad():
        adapted = model(input_ids=ids).logits
    model.save_pretrained(tmp_path / "adapter")
    assert is_adapter_dir(tmp_path / "adapter")
    result = run_cli("merge-lora", str(tmp_path / "adapter"), "--out", str(tmp_path / "merged"),
                     "--base", str(tmp_path / "base"))
    assert result.returncode == 0, result.stderr
    merged = LlamaForCausalLM.from_pretrained(tmp_path / "merged")
    with torch.no_grad():
        torch.testing.assert_close(merged(input_ids=ids).logits, adapted, rtol=1e-4, atol=1e-5)
    assert not any("lora" in n for n, _ in merged.named_parameters())


def test_unknown_targets_are_refused(tmp_path):
    with pytest.raises(ValueError, match="none of the LoRA target modules"):
        apply_lora(_tiny_model(tmp_path), LoraConfig(target_modules=["attn.c_attn"]))


def test_config_validation():
    with pytest.raises(ConfigError, match="rank: must be >= 1"):
        load_config(LoraConfig, overrides=["rank=0"])


def test_merge_refuses_a_non_adapter(tmp_path):
    result = run_cli("merge-lora", str(tmp_path), "--out", str(tmp_path / "m"))
    assert result.returncode == 2 and "adapter_config.json" in result.stderr
