"""Memory the trainer gives back (benchmarks/tools/profile_learning.py found it held):
gradients do not outlive the optimizer step that used them, and nothing the trainer
computes changes for it. The reference run puts the old behaviour back by hand
(gradients kept until the next step's zero_grad, the decode cache gathered into new
buffers when rows finish and kept until the next call, the logits' gradient in a
buffer of its own), and both runs must agree bit for bit."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

import rlvr.training.loop as loop
import rlvr.training.run as run_module
import rlvr.training.sft as sft
from rlvr.algorithms import token_logprobs_and_entropy
from rlvr.accel.decode.fast_llama import FastLlama
from rlvr.training.run import train
from train_helpers import plugin_reward, tiny_config

TESTS = str(Path(__file__).parent)


@pytest.fixture(autouse=True)
def _length_verifier_importable(monkeypatch):
    # verifier workers import train_helpers:LengthVerifier (rewards that differ in a group)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([TESTS, os.environ.get("PYTHONPATH", "")]))


def _config(*extra: str):
    return tiny_config("steps=2", "checkpoint_every=0",
                       *plugin_reward("train_helpers:LengthVerifier"),
                       *extra)


def _watch_gradients(monkeypatch) -> list[tuple[float, bool]]:
    """(rows trained, whether every parameter's .grad is None) after each RL step."""
    seen = []
    real_step, real_sft = run_module.rl_step, run_module.supervised_warmstart

    def step(trainer, number):
        metrics, rollouts = real_step(trainer, number)
        seen.append((metrics["rows_trained"], all(p.grad is None for p in trainer.model.parameters())))
        return metrics, rollouts

    def warmstart(model, *args, **kwargs):
        out = real_sft(model, *args, **kwargs)
        seen.append((-1.0, all(p.grad is None for p in model.parameters())))
        return out

    monkeypatch.setattr(run_module, "rl_step", step)
    monkeypatch.setattr(run_module, "supervised_warmstart", warmstart)
    return seen


@pytest.mark.parametrize("minibatches", [1, 2])
def test_no_gradient_outlives_its_optimizer_step(tmp_path, monkeypatch, minibatches):
    seen = _watch_gradients(monkeypatch)
    train(_config(f"algorithm.minibatches={minibatches}"), tmp_path / "run")
    assert [rows for rows, _ in seen][0] == -1.0  # the warm-start, then 2 RL steps
    assert len(seen) == 3 and any(rows > 0 for rows, _ in seen[1:])  # a backward ran
    assert all(freed for _, freed in seen)


class _CopyingKeep(FastLlama):
    calls = 0

    def keep(self, rows):  # as before the in-place compaction
        _CopyingKeep.calls += 1
        self.keys, self.values = self.keys[:, rows], self.values[:, rows]
        self.valid, self.next_pos = self.valid[rows], self.next_pos[rows]
        self.row_ids = self.row_ids[rows.cpu()]

    def end(self):  # the cache stayed until the next call
        pass


def _with_a_gradient_buffer(logits, *args, **kwargs):
    # as before the update's logits table took its own gradient
    assert logits.owned or not torch.is_grad_enabled()
    return token_logprobs_and_entropy(dataclasses.replace(logits, owned=False), *args, **kwargs)


def _outcome(run_dir: Path) -> tuple[dict, list, list]:
    weights = load_file(next((run_dir / "checkpoints").glob("step-*")) / "model.safetensors")
    metrics = [{k: v for k, v in json.loads(line).items()
                if not k.startswith("time/")
                and k not in ("tokens_per_s", "episode/env_seconds")}
               for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    rollouts = (run_dir / "rollouts.jsonl").read_text().splitlines()
    return weights, metrics, rollouts


def test_the_memory_fixes_change_no_result(tmp_path, monkeypatch):
    # Longer completions and a longer warm-start: rows end at different steps, so
    # finished rows leave the decode batch (the compaction runs).
    cfg = _config("keep_checkpoints=1", "sampling.max_new_tokens=12", "sft.steps=20")
    train(cfg, tmp_path / "now")
    with monkeypatch.context() as old:
        old.setattr(loop, "release_gradients", lambda optimizer: None)
        old.setattr(sft, "release_gradients", lambda optimizer: None)
        old.setattr("rlvr.accel.decode.fast_llama.FastLlama", _CopyingKeep)
        old.setattr(loop, "token_logprobs_and_entropy", _with_a_gradient_buffer)
        train(cfg, tmp_path / "before")
    assert _CopyingKeep.calls > 0  # finished rows did leave the decode batch
    now, before = _outcome(tmp_path / "now"), _outcome(tmp_path / "before")
    assert any(m["rows_trained"] > 0 for m in now[1])  # the weights did move
    assert now[0].keys() == before[0].keys()
    for name, tensor in now[0].items():
        assert torch.equal(tensor, before[0][name]), name
    assert now[1] == before[1] and now[2] == before[2]


@pytest.mark.parametrize("path", ["auto", "tree"])
def test_gradient_checkpointing_changes_no_result(tmp_path, path):
    """model.gradient_checkpointing, the way to bound the update's saved activations
    (~5 GB for 64 SmolLM2 completions: benchmarks/results/profile-learning.md), trains
    the same weights bit for bit: the recomputed forward is the same arithmetic."""
    outcomes = []
    for checkpointing in ("false", "true"):
        run_dir = tmp_path / checkpointing
        train(_config("keep_checkpoints=1", "sampling.max_new_tokens=12", "sft.steps=20",
                      f"update.path={path}", f"model.gradient_checkpointing={checkpointing}"),
              run_dir)
        outcomes.append(_outcome(run_dir))
    (weights, metrics, rollouts), (weights_ckpt, metrics_ckpt, rollouts_ckpt) = outcomes
    assert any(m["rows_trained"] > 0 for m in metrics)
    for name, tensor in weights.items():
        assert torch.equal(tensor, weights_ckpt[name]), name
    assert metrics == metrics_ckpt and rollouts == rollouts_ckpt
