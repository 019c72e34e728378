"""The update's forward behind one seam (rlvr.update_paths): every path gives the
gradient of the plain reference GRPO step (rlvr.training.reference_step), the path that
ran is the one asked for and is recorded on every metrics line, and a path that cannot
run is refused by name before training."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
import torch

from rlvr.algorithms import (LossInputs, Objective, loss_aggregation, policy_loss,
                             token_logprobs_and_entropy)
from rlvr.config import ConfigError
from rlvr.rollout.base import SamplingParams
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.training.batch import pack
from rlvr.training.reference_step import grpo_loss, grpo_step, group_advantages
from rlvr.training.run import train
from rlvr.training.tiny import char_tokenizer, tiny_llama
from rlvr.update_paths import PATHS, RunShape, resolve_update_path
from train_helpers import tiny_config

SHAPE = RunShape(groups=3, group_size=4, prompt_tokens=5, completion_tokens=12)


@pytest.fixture(scope="module")
def sampled():
    torch.manual_seed(0)
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer)
    engine = HFRolloutEngine(model, tokenizer)
    # Common characters as extra end-of-sequence tokens: completions of several lengths.
    engine.eos_ids = sorted({*engine.eos_ids, *tokenizer.convert_tokens_to_ids(list("0123456789"))})
    params = SamplingParams(max_new_tokens=12, temperature=1.0, seed=3, keep_activations=True)
    flat = [c for g in engine.generate(["12+34=", "7+8=", "99+1="], 4, params) for c in g]
    # Old log-probs a little off the sampler's, so ratios differ from 1 and some clip.
    noise = torch.Generator().manual_seed(4)
    old = [torch.tensor(c.logprobs) + 0.3 * torch.randn(len(c.logprobs), generator=noise)
           for c in flat]
    rewards = torch.tensor([[1.0, 0.0, 0.0, 0.5], [0.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    return model, tokenizer, flat, old, rewards


def _reference_grads(model, flat, old, rewards):
    model.zero_grad(set_to_none=True)
    loss = grpo_loss(model, [c.prompt_ids for c in flat], [c.token_ids for c in flat], old,
                     group_advantages(rewards).flatten())
    loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters()}


def _trainer_grads(model, path, batch, old, rewards):
    """The trainer's update computation (the loop's objective, rlvr.algorithms.objective)
    on `path`."""
    model.zero_grad(set_to_none=True)
    old_logprobs = torch.zeros_like(batch.old_logprobs)  # [B, T]
    for row, values in enumerate(old):
        old_logprobs[row, :len(values)] = values
    mask = batch.mask.float()  # [B, T]
    logprobs, entropy = token_logprobs_and_entropy(path.logits(model, batch),
                                                   batch.completion_ids)
    advantages = group_advantages(rewards).flatten()  # [B]
    objective = Objective(policy_loss("ppo_clip", eps_low=0.2, eps_high=0.2))
    out = objective(LossInputs(logprobs, entropy, old_logprobs, advantages, mask,
                               loss_aggregation("token_mean").weights(mask)))
    out.loss.backward()
    assert 0 < out.stats["clip_frac"] < 1  # the clip is exercised, not idle
    return {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("name", PATHS)
def test_every_path_gives_the_reference_gradient(sampled, name):
    model, tokenizer, flat, old, rewards = sampled
    assert len({len(c.token_ids) for c in flat}) > 1  # ragged completions
    batch = pack(flat, tokenizer.pad_token_id, torch.device("cpu"))
    assert batch.activations is not None
    path = resolve_update_path(name, model, SHAPE)
    expected = _reference_grads(model, flat, old, rewards)
    got = _trainer_grads(model, path, batch, old, rewards)
    assert path.take_ran() == name  # the path asked for is the one that ran
    for key, grad in expected.items():
        assert grad.norm() > 0, key
        error = (got[key] - grad).norm() / grad.norm()
        assert error < 1e-5, f"{name} {key}: relative error {float(error):.2e}"


def test_the_reference_step_moves_the_weights_as_the_trainer_objective(sampled):
    """grpo_step (one optimizer step, the obvious way) and one step on the trainer's
    objective over the plain path end at the same weights."""
    model, tokenizer, flat, old, rewards = sampled
    copied = copy.deepcopy(model)  # the shared model's weights stay as sampled (replay)
    prompts, completions = [c.prompt_ids for c in flat], [c.token_ids for c in flat]
    loss = grpo_step(copied, torch.optim.SGD(copied.parameters(), lr=0.5), prompts,
                     completions, old, rewards)
    stepped = dict(copied.named_parameters())
    batch = pack(flat, tokenizer.pad_token_id, torch.device("cpu"))
    grads = _trainer_grads(model, resolve_update_path("plain", model, SHAPE), batch, old,
                           rewards)
    assert loss != 0
    for name, parameter in model.named_parameters():
        assert not torch.equal(stepped[name], parameter), name  # the step moved it
        moved = parameter.detach() - 0.5 * grads[name]  # SGD's step on the objective's grad
        torch.testing.assert_close(stepped[name].detach(), moved, rtol=1e-5, atol=1e-6)


def test_auto_resolves_once_to_replay_then_falls_back(sampled):
    model, tokenizer, flat, _, _ = sampled
    path = resolve_update_path("auto", model, SHAPE)
    assert path.name == "replay" and path.fallback.name == "tree"
    batch = pack(flat, tokenizer.pad_token_id, torch.device("cpu"))
    path.logits(model, batch)
    batch.activations = None  # e.g. a later minibatch, after the weights moved
    path.logits(model, batch)
    with torch.no_grad():  # pi_old / reference forwards are not the update's: not recorded
        path.logits(model, batch)
    assert path.take_ran() == "replay+tree"
    assert path.take_ran() == "none"
    no_kept = resolve_update_path("auto", model, RunShape(3, 4, 5, 12, no_activations="x"))
    assert no_kept.name == "tree"


def test_a_path_that_cannot_run_is_refused_by_name(sampled):
    from transformers import GPT2Config, GPT2LMHeadModel

    model, *_ = sampled
    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=40))
    with pytest.raises(ConfigError, match=r"update\.path: tree cannot run: .*'gpt2'"):
        resolve_update_path("tree", gpt2, SHAPE)
    assert resolve_update_path("auto", gpt2, SHAPE).name in ("packed", "two_pass", "plain")
    with pytest.raises(ConfigError, match=r"update\.path: replay cannot run: engine keeps"):
        resolve_update_path("replay", model, RunShape(3, 4, 5, 12,
                                                      no_activations="engine keeps none"))
    model.gradient_checkpointing_enable()
    try:
        with pytest.raises(ConfigError, match=r"update\.path: two_pass .*gradient checkpointing"):
            resolve_update_path("two_pass", model, SHAPE)
    finally:
        model.gradient_checkpointing_disable()


@pytest.mark.parametrize("overrides,message", [
    (["update.path=replay", "sampling.reuse_activations=false"], "update.path: replay needs"),
    (["update.path=replay", "algorithm.dynamic_sampling=true"], "update.path: replay cannot"),
    (["update.path=two_pass", "model.gradient_checkpointing=true"], "update.path: two_pass"),
    (["update.path=fast"], "update.path"),
])
def test_contradicting_settings_fail_at_config_load(overrides, message):
    with pytest.raises(ConfigError, match=message.replace(".", r"\.")):
        tiny_config(*overrides)


@pytest.fixture
def length_reward(monkeypatch):
    """A reward an untrained model earns unevenly, so the update has rows with signal."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent),
                                                      os.environ.get("PYTHONPATH", "")]))
    return ("reward.plugins=[train_helpers:LengthVerifier]",
            "reward.verifier=train_helpers:LengthVerifier")


def _metrics(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def test_metrics_record_the_path_and_paths_train_alike(tmp_path, length_reward):
    """Every line carries update/path, with the same keys; replay (auto) and plain runs
    sample the same completions and end at the same weights."""
    from safetensors.torch import load_file

    common = ("steps=2", "sft.steps=0", "sampling.group_size=4", *length_reward)
    runs = {"auto": "replay", "plain": "plain", "tree": "tree"}
    for requested in runs:
        train(tiny_config(*common, f"update.path={requested}"), tmp_path / requested)
    lines = {name: _metrics(tmp_path / name) for name in runs}
    for name, ran in runs.items():
        assert [m["update/path"] for m in lines[name]] == [ran, ran]
        assert len({frozenset(m) for m in lines[name]}) == 1  # one key set
        for m, plain in zip(lines[name], lines["plain"]):
            assert m["reward/mean"] == plain["reward/mean"]
            assert m["grad_norm"] == pytest.approx(plain["grad_norm"], rel=1e-4)
            assert m["rows_trained"] > 0
    weights = {name: load_file(str(sorted((tmp_path / name / "checkpoints").glob("step-*"))[-1]
                                   / "model.safetensors")) for name in runs}
    # AdamW divides by sqrt(v): where a gradient is ~0 its float32 rounding shows up at
    # ~lr scale, so compare the weights loosely (the gradients are compared tightly above).
    for name in ("auto", "tree"):
        for key, value in weights[name].items():
            torch.testing.assert_close(value, weights["plain"][key], rtol=1e-3, atol=1e-4)
