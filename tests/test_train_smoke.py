"""`rlvr train` end to end on a tiny model: 2 RL steps through the CLI."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import torch
import yaml
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM, AutoTokenizer

from rlvr.config import load_config
from rlvr.training.config import TrainConfig
from rlvr.training.tiny import TinyModelSpec, char_tokenizer, tiny_llama
from cli_helpers import run_cli
from train_helpers import TINY_OVERRIDES, plugin_reward


def test_two_step_run_writes_every_file(tmp_path, monkeypatch):
    # The reward is a user verifier named by import path (rewards differ within groups, so
    # RL has a signal even for an untrained model); worker processes import it too.
    tests_dir = str(Path(__file__).parent)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([tests_dir, os.environ.get("PYTHONPATH", "")]))
    run_dir = tmp_path / "run"
    result = run_cli("train", "--run-dir", str(run_dir), "steps=2", "checkpoint_every=1",
                     "eval_every=1",
                     "keep_checkpoints=0", *plugin_reward("train_helpers:LengthVerifier"),
                     *TINY_OVERRIDES, timeout=240)
    assert result.returncode == 0, result.stderr
    assert "held-out accuracy before RL" in result.stderr  # live, when it is measured
    assert re.search(r"held-out accuracy: \d\.\d{3} -> \d\.\d{3}", result.stdout)

    # config.yaml is the resolved config and loads back to the same object
    cfg = load_config(TrainConfig, run_dir / "config.yaml")
    assert cfg.steps == 2 and cfg.model.tiny.hidden_size == 32
    assert yaml.safe_load((run_dir / "config.yaml").read_text())["sampling"]["group_size"] == 2

    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1, 2]
    # held-out evaluation every N steps lands in metrics.jsonl (the last step's is "after")
    assert 0.0 <= metrics[0]["eval/accuracy"] <= 1.0 and "eval/accuracy" not in metrics[1]
    assert all(0 < m["reward/length"] <= 1 for m in metrics)  # the verifier's component
    for key in ("reward/mean", "accuracy", "response_length/mean", "truncation_rate",
                "entropy", "clip_frac", "grad_norm", "tokens_per_s", "time/generate",
                "time/verify", "time/update"):
        assert all(key in m for m in metrics), key

    rollouts = [json.loads(line) for line in (run_dir / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 2 * 4 * 2  # steps x prompts x samples
    assert {"prompt_id", "completion", "verdict", "reward", "advantage"} <= set(rollouts[0])

    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 2 and summary["wall_seconds"] > 0
    for phase in ("before", "after"):
        assert 0.0 <= summary["eval"][phase]["accuracy"] <= 1.0
        assert summary["eval"][phase]["n"] == 6

    # checkpoints: HF format, loadable; RL changed the parameters
    steps = sorted(p.name for p in (run_dir / "checkpoints").iterdir())
    assert steps == ["step-000000", "step-000001", "step-000002"]
    start = load_file(run_dir / "checkpoints/step-000000/model.safetensors")
    end = load_file(run_dir / "checkpoints/step-000002/model.safetensors")
    assert any(not torch.equal(start[k], end[k]) for k in start)
    model = AutoModelForCausalLM.from_pretrained(run_dir / "checkpoints/step-000002")
    tokenizer = AutoTokenizer.from_pretrained(run_dir / "checkpoints/step-000002")
    assert model.config.hidden_size == 32 and tokenizer("12+3=")["input_ids"]


def test_sft_command_saves_a_trained_loadable_model(tmp_path):
    run_dir = tmp_path / "sft"
    result = run_cli("sft", "--run-dir", str(run_dir), "--quiet", *TINY_OVERRIDES,
                     "sft.steps=4", timeout=240)
    assert result.returncode == 0, result.stderr
    stats = json.loads(result.stdout.strip().splitlines()[-1])
    assert stats["steps"] == 4 and stats["loss"] > 0
    model = AutoModelForCausalLM.from_pretrained(run_dir / "model")
    assert model.config.num_hidden_layers == 1
    cfg = load_config(TrainConfig, overrides=TINY_OVERRIDES)
    t = cfg.model.tiny
    fresh = tiny_llama(char_tokenizer(), TinyModelSpec(t.hidden_size, t.intermediate_size,
                                                       t.num_layers, t.num_heads,
                                                       t.max_positions), seed=cfg.seed)
    trained, initial = model.state_dict(), fresh.state_dict()
    assert any(not torch.equal(trained[k], initial[k]) for k in initial)
    assert (run_dir / "config.yaml").exists() and (run_dir / "summary.json").exists()
