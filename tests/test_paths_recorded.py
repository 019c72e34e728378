"""The two seams are resolved once per run and recorded: `rollout/path` (the decode
forward) and `update/path` (the update forward), each with a `*_reason` saying why no
faster path runs. Each fast path is turned off here and the recorded reason checked, in
metrics.jsonl (every line) and summary.json; the engine's own state confirms the
recorded decode path is the one that ran."""

from __future__ import annotations

import json

import pytest
import torch

from rlvr.accel.decode import native_gemm
from rlvr.rollout.base import SamplingParams, rollout_path
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.training.run import train
from rlvr.training.tiny import char_tokenizer, tiny_llama
from train_helpers import tiny_config

KEYS = ("rollout/path", "rollout/path_reason", "rollout/path_prefix_reuse", "update/path_reason",
        "update/pi_old")


def _recorded(run_dir, *overrides):
    summary = train(tiny_config("steps=2", "sft.steps=0", *overrides), run_dir)
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert len(lines) == 2
    on_disk = json.loads((run_dir / "summary.json").read_text())
    recorded = {key: on_disk[key] for key in KEYS}
    assert {key: summary[key] for key in KEYS} == recorded
    for line in lines:  # every line, the same values: resolved once
        assert {key: line[key] for key in KEYS} == recorded
    return {**recorded, "update/path": on_disk["update/path"]}


@pytest.fixture
def fresh_native_load():
    """The kernel library's load is cached per process: forget it around a test that
    changes what the load sees."""
    native_gemm._load_once.cache_clear()
    yield
    native_gemm._load_once.cache_clear()


def test_fast_paths_when_nothing_is_off(tmp_path):
    recorded = _recorded(tmp_path)
    if native_gemm.compiler() is None:
        pytest.skip("no C compiler on this machine: the native kernels cannot build")
    assert recorded == {"rollout/path": "fast_llama+native", "rollout/path_reason": "",
                        "rollout/path_prefix_reuse": "kept keys/values",
                        "update/path": "replay", "update/path_reason": "",
                        "update/pi_old": "sampler"}


def test_fast_decode_off_is_recorded_with_its_setting(tmp_path):
    recorded = _recorded(tmp_path, "sampling.fast_decode=false")
    assert recorded["rollout/path"] == "hf"
    assert recorded["rollout/path_reason"] == "fast decode off: sampling.fast_decode=false"
    assert recorded["rollout/path_prefix_reuse"] == "kept keys/values"
    # transformers' decode keeps no activations: the update cannot replay them
    assert recorded["update/path"] == "tree"
    assert recorded["update/path_reason"] == (
        "replay: engine 'hf' keeps no activations for this model")


def test_native_kernels_off_by_env(tmp_path, monkeypatch, fresh_native_load):
    monkeypatch.setenv("RLVR_NATIVE_KERNELS", "0")
    recorded = _recorded(tmp_path)
    assert (recorded["rollout/path"], recorded["rollout/path_reason"]) == (
        "fast_llama", "RLVR_NATIVE_KERNELS=0")


def test_no_compiler_and_a_named_update_path(tmp_path, monkeypatch, fresh_native_load):
    monkeypatch.setenv("CC", "rlvr-no-such-compiler")
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path / "cache"))  # no library built before
    recorded = _recorded(tmp_path / "run", "update.path=plain")
    assert (recorded["rollout/path"], recorded["rollout/path_reason"]) == (
        "fast_llama", "no C compiler ($CC, cc, gcc, clang)")
    assert (recorded["update/path"], recorded["update/path_reason"]) == (
        "plain", "asked for: update.path=plain")


def _sample(engine):
    engine.generate(["1+2="], 2, SamplingParams(max_new_tokens=3, temperature=1.0, seed=0))


def test_the_recorded_decode_path_is_the_one_that_runs(monkeypatch, fresh_native_load):
    """Independently of the recorded name: which stepper the engine built, and whether
    it bound the native step."""
    torch.manual_seed(0)
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer)
    engine = HFRolloutEngine(model, tokenizer)
    _sample(engine)
    native = engine._fast is not None and engine._fast._native is not None
    assert rollout_path(engine).name == ("fast_llama+native" if native else "fast_llama")
    monkeypatch.setenv("RLVR_NATIVE_KERNELS", "0")
    engine = HFRolloutEngine(model, tokenizer)
    _sample(engine)
    assert engine._fast is not None and engine._fast._native is None
    assert rollout_path(engine).name == "fast_llama"
    engine = HFRolloutEngine(model, tokenizer, fast_decode=False)
    _sample(engine)
    assert engine._fast is None and rollout_path(engine).name == "hf"


def test_a_model_family_fast_decode_does_not_cover():
    from transformers import GPT2Config, GPT2LMHeadModel

    gpt2 = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=40))
    engine = HFRolloutEngine(gpt2, char_tokenizer())
    assert rollout_path(engine).name == "hf"
    assert rollout_path(engine).reason == "model family not llama: 'gpt2'"
    float64 = tiny_llama(char_tokenizer()).double()
    assert rollout_path(HFRolloutEngine(float64, char_tokenizer())).reason == (
        "the native kernels take float32 weights; the model has float64")


def test_prefix_reuse_off_is_recorded_with_its_setting(tmp_path):
    recorded = _recorded(tmp_path, "sampling.reuse_prefix=false")
    assert recorded["rollout/path_prefix_reuse"] == "off: sampling.reuse_prefix=false"
