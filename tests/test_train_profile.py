"""Profiles: the demo's defaults with no model, a real model's once model.path is set,
and whatever the user set (YAML or override) always wins."""

from __future__ import annotations

import dataclasses
import os
from types import SimpleNamespace

import pytest
import torch

from rlvr.config import config_to_dict, load_config
from rlvr.data.prompts import resolve_style
from rlvr.training.config import ModelConfig, TrainConfig
from rlvr.training.profile import config_warnings
from rlvr.training.setup import load_policy

# The real-model profile, restated here rather than imported: the test pins the values.
REAL = {("sft", "steps"): 0, ("prompt", "style"): "auto", ("model", "device"): "auto",
        ("model", "threads"): 0, ("optim", "lr"): 1e-6, ("sampling", "max_new_tokens"): 512}


def _flat(cfg: TrainConfig) -> dict[tuple[str, ...], object]:
    def walk(node, path):
        if isinstance(node, dict):
            for key, value in node.items():
                yield from walk(value, path + (key,))
        else:
            yield path, node
    return dict(walk(config_to_dict(cfg), ()))


def test_no_model_keeps_the_demo_defaults():
    assert load_config(TrainConfig) == TrainConfig()
    assert load_config(TrainConfig, overrides=["model.path="]) == TrainConfig()
    demo = TrainConfig()  # the demo's numbers (held-out 0.55 -> 0.97) depend on these
    assert (demo.sft.steps, demo.optim.lr, demo.sampling.max_new_tokens, demo.model.threads,
            demo.model.device, demo.prompt.style) == (1000, 5e-4, 28, 1, "cpu", "plain")


def test_a_real_model_changes_exactly_the_profile_fields():
    real = _flat(load_config(TrainConfig, overrides=["model.path=/models/m"]))
    demo = _flat(TrainConfig())
    changed = {key for key in demo if real[key] != demo[key]}
    assert changed == set(REAL) | {("model", "path")}
    assert {key: real[key] for key in REAL} == REAL


def test_what_the_user_sets_wins_over_the_profile(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("model:\n  path: /models/m\n  device: cpu\nprompt:\n  style: plain\n"
                      "sft:\n  steps: 1000\n")  # the demo's own values, set explicitly
    cfg = load_config(TrainConfig, config, ["optim.lr=3e-6", "sampling.max_new_tokens=28"])
    assert (cfg.model.device, cfg.prompt.style, cfg.sft.steps) == ("cpu", "plain", 1000)
    assert (cfg.optim.lr, cfg.sampling.max_new_tokens) == (3e-6, 28)
    assert cfg.model.threads == 0  # not set by the user: the profile's


def test_lora_gets_a_larger_profile_lr_unless_set():
    lora = load_config(TrainConfig, overrides=["model.path=/m", "model.lora.enabled=true"])
    assert lora.optim.lr == 2e-5
    own = load_config(TrainConfig, overrides=["model.path=/m", "model.lora.enabled=true",
                                              "optim.lr=1e-4"])
    assert own.optim.lr == 1e-4


def test_profile_can_be_chosen_explicitly():
    # A tiny model saved by `rlvr sft` is a path, but wants the demo's settings.
    tiny = load_config(TrainConfig, overrides=["model.path=/runs/sft/model", "profile=demo"])
    assert dataclasses.replace(tiny, model=ModelConfig(), profile="auto") == TrainConfig()
    forced = load_config(TrainConfig, overrides=["profile=real_model"])
    assert (forced.sft.steps, forced.optim.lr) == (0, 1e-6) and forced.model.path == ""
    with pytest.raises(Exception, match="profile"):
        load_config(TrainConfig, overrides=["profile=huge"])


def test_saved_config_reloads_unchanged(tmp_path):
    from rlvr.config import save_config

    cfg = load_config(TrainConfig, overrides=["model.path=/m", "optim.lr=2e-6"])
    save_config(cfg, tmp_path / "config.yaml")
    assert load_config(TrainConfig, tmp_path / "config.yaml") == cfg


def test_warnings_name_settings_that_ruin_a_real_model_run():
    demo_lr = load_config(TrainConfig, overrides=["model.path=/m", "optim.lr=5e-4"])
    assert any(w.startswith("optim.lr=0.0005") for w in config_warnings(demo_lr))
    fine = load_config(TrainConfig, overrides=["model.path=/m"])
    assert config_warnings(fine) == []
    lora = load_config(TrainConfig, overrides=["model.path=/m", "model.lora.enabled=true",
                                               "optim.lr=5e-4"])
    assert not any("optim.lr" in w for w in config_warnings(lora))
    sft = load_config(TrainConfig, overrides=["model.path=/m", "sft.steps=100"])
    assert any(w.startswith("sft.steps=100") for w in config_warnings(sft))
    assert config_warnings(TrainConfig()) == []  # the demo's big lr is right for it


def test_auto_prompt_style_follows_the_tokenizer():
    assert resolve_style("auto", SimpleNamespace(chat_template="{{ x }}")) == "chat"
    assert resolve_style("auto", SimpleNamespace(chat_template=None)) == "plain"
    assert resolve_style("plain", SimpleNamespace(chat_template="{{ x }}")) == "plain"


@pytest.mark.parametrize("omp", [None, "1", "64", "junk"])
def test_threads_0_uses_every_core(monkeypatch, omp):
    """model.threads=0: every core of the process's affinity, or OMP_NUM_THREADS when
    the operator set it lower (a larger or unreadable value changes nothing)."""
    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    cores = len(os.sched_getaffinity(0))
    expected = 1 if omp == "1" else cores
    before = torch.get_num_threads()
    try:
        cfg = load_config(TrainConfig, overrides=["model.threads=0", "model.tiny.num_layers=1",
                                                  "model.tiny.hidden_size=16",
                                                  "model.tiny.intermediate_size=32",
                                                  "model.tiny.num_heads=2"])
        torch.set_num_threads(1 if expected > 1 else 2)  # not what it should become
        load_policy(cfg.model, seed=0)
        assert torch.get_num_threads() == expected
    finally:
        torch.set_num_threads(before)
