"""The update's forward replayed from the sampler's kept activations (rlvr.accel.update.replay)
equals the ordinary forward: same log-probs, same gradients; it steps aside whenever it
would not be exact."""

from __future__ import annotations

import json

import pytest
import torch

import rlvr.accel.update.replay as replay
from rlvr.algorithms import token_logprobs
from rlvr.rollout.base import SamplingParams
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.training.batch import pack
from rlvr.update_paths import ReplayPath, SharedPrefixPath
from rlvr.training.run import train
from rlvr.training.tiny import char_tokenizer, tiny_llama
from train_helpers import tiny_config


def _gqa_with_biases(tokenizer):
    """Grouped-query attention (q wider than k and v), biases on every projection,
    an lm_head of its own: the slicing and bias gradients a plain tiny Llama skips."""
    from transformers import LlamaConfig, LlamaForCausalLM

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        return LlamaForCausalLM(LlamaConfig(
            vocab_size=len(tokenizer), hidden_size=32, intermediate_size=48,
            num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
            attention_bias=True, mlp_bias=True, tie_word_embeddings=False,
            pad_token_id=tokenizer.pad_token_id, attention_dropout=0.0))


@pytest.fixture(scope="module", params=["tiny", "gqa-biases"])
def setup(request):
    torch.manual_seed(0)
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer) if request.param == "tiny" else _gqa_with_biases(tokenizer)
    engine = HFRolloutEngine(model, tokenizer)
    # A common character as an extra end-of-sequence token: rows stop at different
    # lengths, so the decode drops finished rows mid-way (its `keep` path).
    engine.eos_ids = sorted({*engine.eos_ids, tokenizer.convert_tokens_to_ids("e")})
    params = SamplingParams(max_new_tokens=16, temperature=1.0, seed=5, keep_activations=True)
    groups = engine.generate(["abc", "hello wor", "x"], 5, params)  # prompts of 3 lengths
    flat = [c for g in groups for c in g]
    return model, tokenizer, flat


def _count_kept(monkeypatch) -> list[int]:
    """Calls of the replayed layers and the kept lm_head, counted together."""
    calls = [0]

    def counting(real):
        def counted(*args):
            calls[0] += 1
            return real(*args)
        return counted

    monkeypatch.setattr(replay._KeptLinear, "apply", counting(replay._KeptLinear.apply))
    monkeypatch.setattr(replay, "replay_layer", counting(replay.replay_layer))
    return calls


def completion_logits(model, batch, expect=None):
    """The replay path (tree where it cannot replay), asserting which route ran."""
    path = ReplayPath(fallback=SharedPrefixPath("tree"))
    with torch.enable_grad():
        logits = path.logits(model, batch)
    if expect is not None:
        assert path.take_ran() == expect
    return logits


def _loss_and_grads(model, batch, expect=None):
    model.zero_grad(set_to_none=True)
    model.train()
    logits = completion_logits(model, batch, expect).dense()  # [B, T, V]
    logprobs = token_logprobs(logits, batch.completion_ids, 1.0)  # [B, T]
    weights = torch.linspace(-1.0, 1.0, batch.mask.shape[0])[:, None]  # [B, 1]
    (logprobs * batch.mask * weights).sum().backward()
    model.eval()
    return logprobs.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("rows", [None, [1, 3, 5, 8, 12, 14, 13]])
def test_replay_equals_the_ordinary_forward(setup, monkeypatch, rows):
    model, tokenizer, flat = setup
    lengths = {len(c.token_ids) for c in flat}
    assert len(lengths) > 2 and 16 in lengths  # some rows ended early, some ran to the limit
    batch = pack(flat, tokenizer.pad_token_id, torch.device("cpu"))
    if rows is not None:
        batch = batch.rows(torch.tensor(rows))
    assert batch.activations is not None
    calls = _count_kept(monkeypatch)
    replayed, replayed_grads = _loss_and_grads(model, batch, expect="replay")
    layers = model.config.num_hidden_layers
    assert calls[0] == layers + 1  # every layer and the lm_head replayed
    batch.activations = None
    ordinary, ordinary_grads = _loss_and_grads(model, batch, expect="tree")
    assert calls[0] == layers + 1  # ... and none without kept activations
    mask = batch.mask.bool()
    # The replayed log-probs are the sampler's own (its logits), to float32 rounding.
    torch.testing.assert_close(replayed[mask], batch.old_logprobs[mask], rtol=0, atol=2e-6)
    torch.testing.assert_close(replayed[mask], ordinary[mask], rtol=0, atol=2e-6)
    # Float32 rounding differs (the decode's GEMMs are not the training forward's), so
    # compare each gradient as a whole: its error relative to its norm.
    for name, grad in ordinary_grads.items():
        error = (replayed_grads[name] - grad).norm() / grad.norm()
        assert error < 1e-5, f"{name}: relative error {float(error):.2e}"
        assert grad.norm() > 0, name


def test_replay_under_activation_checkpointing(setup, monkeypatch):
    """The replayed layers hold only their inputs, so checkpointing needs no exception:
    the replay runs and its gradients equal the checkpointed ordinary forward's."""
    model, tokenizer, flat = setup
    batch = pack(flat, tokenizer.pad_token_id, torch.device("cpu"))
    model.gradient_checkpointing_enable()
    try:
        calls = _count_kept(monkeypatch)
        _, replayed = _loss_and_grads(model, batch, expect="replay")
        assert calls[0] == model.config.num_hidden_layers + 1
        batch.activations = None
        _, ordinary = _loss_and_grads(model, batch, expect="tree")
    finally:
        model.gradient_checkpointing_disable()
    for name, grad in ordinary.items():
        assert (replayed[name] - grad).norm() / grad.norm() < 1e-5, name


def test_no_replay_once_the_weights_moved(setup, monkeypatch):
    model, tokenizer, flat = setup
    batch = pack(flat, tokenizer.pad_token_id, torch.device("cpu"))
    with torch.no_grad():
        model.model.norm.weight.mul_(1.0)  # an in-place write, as an optimizer step does
    calls = _count_kept(monkeypatch)
    assert replay.replay_logits(model, batch.input_ids, batch.attention_mask,
                                batch.completion_ids, batch.mask, batch.activations) is None
    completion_logits(model, batch, expect="tree")
    assert calls[0] == 0


def test_no_replay_for_another_model(setup):
    model, tokenizer, flat = setup
    other = tiny_llama(tokenizer)
    batch = pack(flat, tokenizer.pad_token_id, torch.device("cpu"))
    assert replay.replay_logits(other, batch.input_ids, batch.attention_mask,
                                batch.completion_ids, batch.mask, batch.activations) is None


def test_no_replay_for_lora_layers(setup):
    peft = pytest.importorskip("peft")
    _, tokenizer, _ = setup
    model = peft.get_peft_model(tiny_llama(tokenizer),
                                peft.LoraConfig(r=2, target_modules=["q_proj", "v_proj"]))
    engine = HFRolloutEngine(model, tokenizer)
    params = SamplingParams(max_new_tokens=6, temperature=1.0, seed=1, keep_activations=True)
    flat = [c for g in engine.generate(["ab"], 3, params) for c in g]
    batch = pack(flat, tokenizer.pad_token_id, torch.device("cpu"))
    assert batch.activations is not None  # the decode kept them ...
    assert replay.replay_logits(model, batch.input_ids, batch.attention_mask,
                                batch.completion_ids, batch.mask, batch.activations) is None


def test_activation_budget(setup):
    model, tokenizer, _ = setup
    params = SamplingParams(max_new_tokens=6, temperature=1.0, seed=1, keep_activations=True)
    small = HFRolloutEngine(model, tokenizer, activation_budget_gb=1e-6)
    assert all(c.activations is None for g in small.generate(["ab"], 3, params) for c in g)
    plain = HFRolloutEngine(model, tokenizer)
    unasked = SamplingParams(max_new_tokens=6, temperature=1.0, seed=1)
    assert all(c.activations is None for g in plain.generate(["ab"], 3, unasked) for c in g)


def test_training_with_replay_ends_at_the_same_weights(tmp_path):
    """Two RL steps with and without replay: same samples, same weights (to rounding)."""
    from safetensors.torch import load_file

    common = ("steps=2", "sft.steps=0", "sampling.group_size=4")
    train(tiny_config(*common), tmp_path / "replay")
    train(tiny_config(*common, "sampling.reuse_activations=false"), tmp_path / "plain")
    for a, b in zip(*(_metrics(tmp_path / name) for name in ("replay", "plain"))):
        assert a["reward/mean"] == b["reward/mean"]
        assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-4, abs=1e-7)
    final = {name: load_file(str(sorted((tmp_path / name / "checkpoints").glob("step-*"))[-1]
                                 / "model.safetensors")) for name in ("replay", "plain")}
    for key, value in final["replay"].items():
        torch.testing.assert_close(value, final["plain"][key], rtol=1e-5, atol=1e-6)


def _metrics(run_dir):
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("dynamic,kept", [(False, True), (True, False)])
def test_trainer_asks_for_activations_only_from_single_draws(tmp_path, monkeypatch,
                                                             dynamic, kept):
    """DAPO dynamic sampling keeps groups from several draws, whose mixed captures the
    replay cannot use: the trainer does not ask the engine to keep them there."""
    asked = []
    real = HFRolloutEngine.generate_ids  # what the episode runner calls

    def recording(self, prompt_ids, n, params):
        asked.append(params.keep_activations)
        return real(self, prompt_ids, n, params)

    monkeypatch.setattr(HFRolloutEngine, "generate_ids", recording)
    extra = ["algorithm.dynamic_sampling=true", "algorithm.max_draws=2"] if dynamic else []
    train(tiny_config("steps=1", "sft.steps=0", "sampling.group_size=4", *extra),
          tmp_path / "r")
    training_calls = [a for a in asked if a]  # evaluation never asks (greedy)
    assert bool(training_calls) is kept
