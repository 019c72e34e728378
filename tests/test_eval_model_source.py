"""`rlvr eval` finds the model behind a run directory, a checkpoint or a LoRA adapter."""

from __future__ import annotations

import json

import pytest
import torch

from rlvr.evaluation.model_source import ModelSourceError, latest_checkpoint, load, resolve
from rlvr.training.tiny import build_tiny


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny") / "model")


def _fake_checkpoint(path):
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    return path


def test_latest_checkpoint_by_step_number_or_latest_pointer(tmp_path):
    run = tmp_path / "run"
    for name in ("step-000002", "step-000010", "step-000009", ".tmp-step-000011"):
        _fake_checkpoint(run / "checkpoints" / name)  # the trainer's layout
    (run / "checkpoints" / "notes").mkdir()  # not loadable: ignored
    # 10 > 9 > 2; the half-written .tmp-step-000011 does not count
    assert latest_checkpoint(run).name == "step-000010"
    (run / "checkpoints" / "latest").write_text("step-000009\n")
    assert latest_checkpoint(run).name == "step-000009"
    (tmp_path / "r2" / "checkpoints").mkdir(parents=True)
    with pytest.raises(ModelSourceError, match="no checkpoint"):
        latest_checkpoint(tmp_path / "r2")


def test_run_directory_resolves_to_its_latest_model(tiny, tmp_path):
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "checkpoints" / "step_3").symlink_to(tiny)
    source = resolve(run)
    assert source.kind == "hf" and source.path.name == "step_3"
    with pytest.raises(ModelSourceError, match="not found"):
        resolve(tmp_path / "nothing-here")


def test_lora_adapter_is_merged_into_its_base(tiny, tmp_path):
    peft = pytest.importorskip("peft")
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny)
    config = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    model = peft.get_peft_model(base, config)
    with torch.no_grad():  # LoRA's B starts at zero; make the adapter change something
        for name, param in model.named_parameters():
            if "lora_B" in name:
                param.normal_(std=0.5, generator=torch.Generator().manual_seed(0))
    adapter = tmp_path / "adapter"
    model.save_pretrained(adapter)
    ids = torch.tensor([[5, 6, 7, 8]])
    expected = model(ids).logits
    assert json.loads((adapter / "adapter_config.json").read_text())["base_model_name_or_path"]
    source = resolve(adapter, base=tiny)
    assert source.kind == "lora"
    merged, tokenizer = load(source)
    assert tokenizer.eos_token == "</s>"
    plain = AutoModelForCausalLM.from_pretrained(tiny)(ids).logits
    got = merged(ids).logits
    assert torch.allclose(got, expected, atol=1e-4)
    assert not torch.allclose(got, plain, atol=1e-3)
