"""Engines by name with declared capabilities (rlvr.rollout.factory), the defaults that
follow from them, and the kept activations as a typed object owned by a weak reference."""

from __future__ import annotations

import gc
import re

import pytest
import torch

from rlvr.config import ConfigError
from rlvr.rollout import factory
from rlvr.rollout.base import EngineCapabilities, KeptActivations, SamplingParams
from rlvr.accel.decode.capture import ActivationCapture
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.training.tiny import char_tokenizer, tiny_llama
from train_helpers import plugin_reward, tiny_config


class OffNumericsEngine(HFRolloutEngine):
    """An engine whose log-probs are not the trainer's (as a vLLM engine's are not)."""

    CAPABILITIES = EngineCapabilities(keeps_activations=False, logprobs_match_trainer=False)

    @property
    def capabilities(self) -> EngineCapabilities:
        return self.CAPABILITIES

    def generate_ids(self, prompt_ids, n, params):  # `generate` comes here too
        groups = super().generate_ids(prompt_ids, n, params)
        for group in groups:
            for c in group:
                c.logprobs = [x - 0.5 for x in c.logprobs]  # a sampler that disagrees
        return groups


@pytest.fixture
def off_engine(monkeypatch):
    monkeypatch.setitem(factory.ENGINES, "offnum", f"{__name__}:OffNumericsEngine")
    return "sampling.engine=offnum"


def test_engines_by_name_and_their_declarations():
    assert factory.engine_names() == ["hf", "vllm"]
    assert factory.declared_capabilities("hf") == EngineCapabilities(True, True)
    # vLLM's kernels are not the trainer's: pi_old is recomputed, nothing is replayed
    # (declared without importing vllm, which this environment may lack)
    assert factory.declared_capabilities("vllm") == EngineCapabilities(False, False)
    tokenizer = char_tokenizer()
    engine = factory.build_engine("hf", tiny_llama(tokenizer), tokenizer,
                                  factory.EngineOptions(max_batch_rows=8))
    assert isinstance(engine, HFRolloutEngine) and engine.max_batch_rows == 8
    assert engine.capabilities.keeps_activations  # CPU fast decode of a Llama
    slow = factory.build_engine("hf", engine.model, tokenizer,
                                factory.EngineOptions(fast_decode=False))
    assert not slow.capabilities.keeps_activations


def test_unknown_engine_fails_at_config_load():
    with pytest.raises(ConfigError,
                       match=r"sampling\.engine: unknown engine 'sglang' \(known: hf, vllm\)"):
        tiny_config("sampling.engine=sglang")


def test_recompute_follows_the_engine(off_engine):
    assert not EngineCapabilities(True, True).recompute_old_logprobs(None)
    assert EngineCapabilities(False, False).recompute_old_logprobs(None)
    assert EngineCapabilities(True, True).recompute_old_logprobs(True)
    tiny_config(off_engine)  # null: recomputed, fine
    with pytest.raises(ConfigError, match=r"algorithm\.recompute_old_logprobs: engine 'offnum'"):
        tiny_config(off_engine, "algorithm.recompute_old_logprobs=false")
    with pytest.raises(ConfigError, match=r"update\.path: engine 'offnum' keeps no activations"):
        tiny_config(off_engine, "update.path=replay")


def test_an_engine_with_other_numbers_trains_on_recomputed_pi_old(tmp_path, off_engine,
                                                                 monkeypatch):
    """Its log-probs are 0.5 off; pi_old is recomputed, so the first epoch's ratio is 1."""
    import os
    from pathlib import Path

    from rlvr.training.run import train

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent),
                                                      os.environ.get("PYTHONPATH", "")]))
    train(tiny_config("steps=1", "sft.steps=0", "sampling.group_size=4", off_engine,
                      *plugin_reward("train_helpers:LengthVerifier")), tmp_path / "r")
    import json
    metrics = json.loads((tmp_path / "r" / "metrics.jsonl").read_text().splitlines()[0])
    assert metrics["rows_trained"] > 0
    assert metrics["update/path"] == "tree"  # the engine keeps nothing to replay
    assert metrics["ratio_max"] == pytest.approx(1.0, abs=1e-5)
    assert metrics["ratio_min"] == pytest.approx(1.0, abs=1e-5)


def test_kept_activations_know_their_model_by_weak_reference():
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer)
    engine = HFRolloutEngine(model, tokenizer)
    params = SamplingParams(max_new_tokens=4, temperature=1.0, seed=1, keep_activations=True)
    completions = [c for g in engine.generate(["ab"], 2, params) for c in g]
    kept = completions[0].activations
    assert isinstance(kept, KeptActivations) and kept.row == 0
    assert completions[1].activations.store is kept.store
    assert kept.made_by(model) and not kept.made_by(tiny_llama(tokenizer))
    # The capture does not keep the model alive, and once it is gone matches nothing
    # (an id() could be reused by the next object allocated there).
    del engine, model
    gc.collect()
    assert kept.store._owner() is None
    assert not any(kept.made_by(obj) for obj in (None, object(), tiny_llama(tokenizer)))


def test_capture_docstring_names_only_what_exists():
    """Every `name` the ActivationCapture docstring lists is an attribute of a capture."""
    from rlvr.accel.decode.capture import CaptureShape

    shape = CaptureShape(layers=1, widths={"qkv": 6, "o": 2, "gate_up": 4, "down": 2},
                         vocab=5, prompts=1, prompt_width=2, samples=2, max_new_tokens=3)
    capture = ActivationCapture(shape, [2], (0,), torch.nn.Linear(1, 1), torch.float32,
                                torch.device("cpu"))
    named = re.findall(r"`(\w+)`", ActivationCapture.__doc__)
    assert len(named) >= 10
    missing = [name for name in named if not hasattr(capture, name)]
    assert missing == []
