"""LoRA through the trainer (tiny model): only adapter weights move, checkpoints hold the
adapter, an interrupted LoRA run resumes to the same adapter, and `rlvr merge-lora` on
a run's checkpoint gives a plain model with the adapted outputs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from transformers import LlamaForCausalLM

import rlvr.training.run as run_module
from cli_helpers import run_cli
from rlvr.training.run import train
from rlvr.training.setup import load_policy
from train_helpers import interrupt_at, plugin_reward, tiny_config

pytest.importorskip("peft", reason="LoRA needs the peft extra")

LORA = ["model.lora.enabled=true", "model.lora.rank=4", "model.lora.alpha=8",
        "optim.lr=5e-2", *plugin_reward("train_helpers:LengthVerifier"), "keep_checkpoints=0",
        "checkpoint_every=1"]


@pytest.fixture
def helpers_on_path(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent),
                                                      os.environ.get("PYTHONPATH", "")]))


def test_lora_run_moves_only_adapters_resumes_and_merges(tmp_path, monkeypatch, helpers_on_path):
    cfg = tiny_config("steps=3", *LORA)
    full = tmp_path / "full"
    train(cfg, full)
    final = full / "checkpoints" / "step-000003"
    assert (final / "adapter_config.json").is_file() and not (final / "model.safetensors").exists()

    base, _ = load_policy(tiny_config().model, cfg.seed)  # the same seeded tiny base
    trained, _ = load_policy(cfg.model, cfg.seed, final)
    base_weights = dict(base.named_parameters())
    moved = 0
    for name, param in trained.named_parameters():
        if "lora_" in name:
            assert param.requires_grad, name
            moved += int("lora_B" in name and bool(param.detach().abs().sum() > 0))
        else:
            assert not param.requires_grad, name
            plain = name.removeprefix("base_model.model.").replace(".base_layer", "")
            assert torch.equal(param, base_weights[plain]), name
    assert moved > 0  # B starts at zero: any nonzero B was learned

    # Interrupted after step 2's checkpoint, resumed: the same adapter as the full run.
    part = tmp_path / "part"
    with monkeypatch.context() as patch:
        patch.setattr(run_module, "rl_step", interrupt_at(3))
        with pytest.raises(KeyboardInterrupt):
            train(cfg, part)
    train(cfg, part, resume=True)
    a = load_file(final / "adapter_model.safetensors")
    b = load_file(part / "checkpoints/step-000003/adapter_model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)

    # Merge the run's checkpoint into the base; the plain model computes what the adapter did.
    base.save_pretrained(tmp_path / "base")
    result = run_cli("merge-lora", str(final), "--out", str(tmp_path / "merged"),
                     "--base", str(tmp_path / "base"))
    assert result.returncode == 0, result.stderr
    merged = LlamaForCausalLM.from_pretrained(tmp_path / "merged")
    ids = torch.randint(3, 20, (2, 10))
    trained.eval()
    with torch.no_grad():
        torch.testing.assert_close(merged(input_ids=ids).logits, trained(input_ids=ids).logits,
                                   rtol=1e-4, atol=1e-5)
    assert not any("lora" in n for n, _ in merged.named_parameters())


def test_gradient_checkpointing_run(tmp_path, helpers_on_path):
    cfg = tiny_config("steps=1", "model.gradient_checkpointing=true", *LORA)
    model, _ = load_policy(cfg.model, cfg.seed)
    assert model.is_gradient_checkpointing
    summary = train(cfg, tmp_path / "run")
    assert summary["final_metrics"]["step"] == 1
    assert summary["final_metrics"]["grad_norm"] > 0


def test_lora_run_with_a_kl_reference(tmp_path, helpers_on_path):
    cfg = tiny_config("steps=2", "algorithm.kl_beta=0.1", *LORA)
    run_dir = tmp_path / "run"
    summary = train(cfg, run_dir)
    assert (run_dir / "reference" / "adapter_config.json").is_file()  # the frozen start
    assert summary["final_metrics"]["kl"] > 0  # the adapter moved away from the reference
    reference, _ = load_policy(cfg.model, cfg.seed, run_dir / "reference")
    start, _ = load_policy(cfg.model, cfg.seed, run_dir / "checkpoints" / "step-000000")
    for (name, a), (_, b) in zip(reference.named_parameters(), start.named_parameters()):
        assert torch.equal(a, b), name  # the reference is the policy at step 0
