"""The vLLM rollout engine (rlvr.rollout.vllm.engine) on a tiny char-level Llama: the
generation contract, weight syncs that provably take effect (file, direct), syncs that
fail loudly, bad input, and a colocated training run's metrics (server mode:
tests/test_vllm_server.py).

Every expected value is computed independently of the engine: the model's own forward
(log_softmax(logits / T)), argmax decoding by hand, the tokenizer.

Needs vllm (`make vllm-env`; run with `make test-vllm`). The config and input checks at
the top need no vllm and run in rlvr's main environment too; the rest skip there."""

from __future__ import annotations

import gc
import json
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import load_file, save_file

from rlvr.config import ConfigError
from rlvr.rollout.base import SamplingParams
from rlvr.rollout.vllm.client import VLLMServerError
from rlvr.rollout.vllm.engine import VLLMEngine, VLLMSettings, WeightSyncError
from rlvr.rollout.vllm.env import vllm_importable
from rlvr.training.tiny import TinyModelSpec, char_tokenizer, tiny_llama
from train_helpers import tiny_config
from vllm_helpers import (ENGINE_SHAPE, PROMPTS, TRAIN_MODEL, TRAIN_SHAPE, VLLM_MISSING,
                          check_sync_takes_effect, engine_vs_trainer, forward_logprobs,
                          free_port, greedy_by_hand, optimizer_step, scored_sequences)

needs_vllm = pytest.mark.skipif(not vllm_importable(), reason=VLLM_MISSING)

def _mean_gap(a, b) -> float:
    return float((torch.as_tensor(a, dtype=torch.float32)
                  - torch.as_tensor(b, dtype=torch.float32)).abs().mean())


# -- config and input checks: no vLLM needed ------------------------------------------

def test_config_refuses_direct_sync_with_a_server():
    with pytest.raises(ConfigError, match=r"sampling\.vllm\.sync: direct needs mode=colocate"):
        tiny_config("sampling.engine=vllm", "sampling.vllm.mode=server",
                    "sampling.vllm.sync=direct")


def test_config_refuses_a_url_that_is_not_http():
    with pytest.raises(ConfigError, match=r"sampling\.vllm\.url: must be an http\(s\) URL"):
        tiny_config("sampling.engine=vllm", "sampling.vllm.mode=server",
                    "sampling.vllm.url=127.0.0.1:8100")


def test_engine_refuses_bad_mode_and_sync_before_connecting(tmp_path):
    tok = char_tokenizer()
    model = tiny_llama(tok, TinyModelSpec(**TRAIN_MODEL))
    # nothing listens on the port: each error must come before any connection attempt
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ValueError, match="sync=direct needs mode=colocate"):
        VLLMEngine(model, tok, VLLMSettings(mode="server", url=url, sync="direct",
                                            sync_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="sync must be auto, file or direct"):
        VLLMEngine(model, tok, VLLMSettings(mode="server", url=url, sync="rsync",
                                            sync_dir=str(tmp_path)))
    with pytest.raises(ValueError, match="mode must be colocate or server, got 'remote'"):
        VLLMEngine(model, tok, VLLMSettings(mode="remote", url=url, sync_dir=str(tmp_path)))


def test_lora_model_is_refused_before_vllm_starts(tmp_path):
    from rlvr.models.lora import LoraConfig, apply_lora

    tok = char_tokenizer()
    model = apply_lora(tiny_llama(tok, TinyModelSpec(**TRAIN_MODEL)),
                       LoraConfig(enabled=True, rank=2, alpha=4))
    began = time.perf_counter()
    with pytest.raises(ValueError, match="does not take LoRA models"):
        VLLMEngine(model, tok, VLLMSettings(sync_dir=str(tmp_path)))
    assert time.perf_counter() - began < 2.0
    assert list(tmp_path.iterdir()) == []  # refused before any snapshot was written


def test_closed_port_raises_server_error_naming_the_url(tmp_path):
    tok = char_tokenizer()
    model = tiny_llama(tok, TinyModelSpec(**TRAIN_MODEL))
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(VLLMServerError) as caught:
        VLLMEngine(model, tok, VLLMSettings(mode="server", url=url, sync_dir=str(tmp_path),
                                            timeout_s=5))
    assert url in str(caught.value) and "rlvr vllm-serve" in str(caught.value)


def test_failed_start_leaves_no_sync_directory(tmp_path):
    tok = char_tokenizer()
    model = tiny_llama(tok, TinyModelSpec(**TRAIN_MODEL))
    with pytest.raises(VLLMServerError):
        VLLMEngine(model, tok, VLLMSettings(mode="server", url=f"http://127.0.0.1:"
                                            f"{free_port()}", sync_dir=str(tmp_path)))
    assert list(tmp_path.iterdir()) == []


# -- one colocated engine for the module --------------------------------------------

@pytest.fixture(scope="module")
def colocated():
    if not vllm_importable():
        pytest.skip(VLLM_MISSING)
    tok = char_tokenizer()
    model = tiny_llama(tok, TinyModelSpec(**ENGINE_SHAPE), seed=0).eval()
    engine = VLLMEngine(model, tok, VLLMSettings(max_model_len=128, kv_cache_gb=0.25))
    yield SimpleNamespace(model=model, tok=tok, engine=engine)
    engine.close()


@pytest.fixture
def resync(colocated):
    """For tests that move the model or break a sync: afterwards the engine holds the
    model's weights again (checked), whatever the test left behind."""
    engine = colocated.engine
    mode = engine.sync_mode
    yield colocated
    engine.sync_mode = mode
    engine.sync_weights(colocated.model)


def _ids(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


@needs_vllm
def test_capabilities_and_defaults(colocated):
    engine = colocated.engine
    assert engine.capabilities.logprobs_match_trainer is False
    assert engine.capabilities.keeps_activations is False
    assert engine.sync_mode == "file"  # auto on CPU
    assert engine.workdir.is_dir()


@needs_vllm
def test_generate_shapes_and_finish_reasons(colocated):
    engine, tok = colocated.engine, colocated.tok
    eos = tok.eos_token_id
    out = engine.generate(PROMPTS, 8, SamplingParams(max_new_tokens=24, temperature=1.0,
                                                     seed=3))
    assert [len(group) for group in out] == [8, 8, 8]
    reasons = set()
    for prompt, group in zip(PROMPTS, out):
        for c in group:
            assert c.prompt_ids == _ids(tok, prompt)
            assert len(c.logprobs) == len(c.token_ids) and all(lp <= 0 for lp in c.logprobs)
            assert c.text == tok.decode(c.token_ids, skip_special_tokens=True)
            if c.finish_reason == "eos":
                assert c.token_ids[-1] == eos and eos not in c.token_ids[:-1]
                assert len(c.token_ids) <= 24 and not c.truncated
            else:
                assert c.finish_reason == "length" and c.truncated
                assert len(c.token_ids) == 24 and eos not in c.token_ids
            reasons.add(c.finish_reason)
    assert reasons == {"eos", "length"}


@needs_vllm
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_sampled_logprobs_are_the_trainers(colocated, temperature):
    engine, model = colocated.engine, colocated.model
    out = engine.generate(PROMPTS, 4, SamplingParams(max_new_tokens=16,
                                                     temperature=temperature, seed=11))
    worst = 0.0
    for group in out:
        for c in group:
            ours = forward_logprobs(model, c.prompt_ids, c.token_ids, temperature)
            worst = max(worst, float((torch.tensor(c.logprobs) - ours).abs().max()))
    assert worst < 1e-4
    if temperature != 1.0:  # the temperature is applied: T=1 numbers would not match
        c = out[0][0]
        at_one = forward_logprobs(model, c.prompt_ids, c.token_ids, 1.0)
        assert _mean_gap(c.logprobs, at_one) > 1e-2


@needs_vllm
def test_greedy_follows_the_argmax_without_logprobs(colocated):
    engine, model, tok = colocated.engine, colocated.model, colocated.tok
    params = SamplingParams(max_new_tokens=12, temperature=0.0)
    first = engine.generate(PROMPTS, 1, params)
    again = engine.generate(PROMPTS, 1, params)
    for prompt, group, other in zip(PROMPTS, first, again):
        expected = greedy_by_hand(model, _ids(tok, prompt), 12, tok.eos_token_id)
        for c in group + other:
            assert c.token_ids == expected and c.logprobs == []


@needs_vllm
def test_generate_ids_continues_token_ids_no_text_makes(colocated):
    """An episode's context: sampled tokens, EOS, then an environment's tokens. The ids go
    to vLLM as they are; greedy follows the argmax of the model's own forward."""
    engine, model, tok = colocated.engine, colocated.model, colocated.tok
    eos = tok.eos_token_id
    contexts = [_ids(tok, "12+34=") + [eos] + _ids(tok, "again:"),
                [tok.bos_token_id] + _ids(tok, "7+5=") + [eos, eos]]
    out = engine.generate_ids(contexts, 1, SamplingParams(max_new_tokens=10, temperature=0.0))
    for ids, group in zip(contexts, out):
        assert group[0].prompt_ids == ids
        assert group[0].token_ids == greedy_by_hand(model, ids, 10, eos)


@needs_vllm
def test_greedy_with_several_samples_repeats_the_argmax(colocated):
    engine, model, tok = colocated.engine, colocated.model, colocated.tok
    out = engine.generate(PROMPTS, 2, SamplingParams(max_new_tokens=12, temperature=0.0))
    for prompt, group in zip(PROMPTS, out):
        expected = greedy_by_hand(model, _ids(tok, prompt), 12, tok.eos_token_id)
        assert len(group) == 2
        assert all(c.token_ids == expected and c.logprobs == [] for c in group)


@needs_vllm
def test_seeds_reproduce_and_samples_differ(colocated):
    engine = colocated.engine

    def tokens(seed):
        out = engine.generate(PROMPTS, 4, SamplingParams(max_new_tokens=10, temperature=1.0,
                                                         seed=seed))
        return [[c.token_ids for c in group] for group in out]

    first = tokens(5)
    assert tokens(5) == first
    assert tokens(6) != first
    for group in first:  # the samples of one prompt are distinct draws
        assert len({tuple(t) for t in group}) == len(group)
    flat = [tuple(t) for group in first for t in group]
    assert len(set(flat)) == len(flat)  # and no prompt repeats another's samples


@needs_vllm
def test_stop_string_cuts_text_and_ends_the_sample(colocated):
    engine, tok = colocated.engine, colocated.tok
    free = engine.generate(PROMPTS, 1, SamplingParams(max_new_tokens=20, temperature=1.0,
                                                      seed=21))
    for prompt, group in zip(PROMPTS, free):
        whole = group[0]
        if len(whole.text) < 8:
            continue
        stop = whole.text[4:6]
        cut = engine.generate([prompt], 1, SamplingParams(
            max_new_tokens=20, temperature=1.0, seed=21, stop=("never-here", stop)))[0][0]
        assert cut.finish_reason == "stop" and not cut.truncated
        assert cut.text == whole.text[:whole.text.find(stop)]
        # the same draws up to the token that completed the stop string, which is kept
        assert cut.token_ids == whole.token_ids[:len(cut.token_ids)]
        assert cut.logprobs == pytest.approx(whole.logprobs[:len(cut.token_ids)], abs=1e-6)
        assert stop in tok.decode(cut.token_ids, skip_special_tokens=True)
        assert stop not in tok.decode(cut.token_ids[:-1], skip_special_tokens=True)
        break
    else:
        pytest.fail("no prompt produced enough text to test a stop string")


# -- weight sync ------------------------------------------------------------------

@needs_vllm
@pytest.mark.parametrize("mode", ["file", "direct"])
def test_weight_sync_takes_effect(resync, mode):
    engine, model = resync.engine, resync.model
    engine.sync_mode = mode  # the same runner: file -> reload_from, direct -> load_tensors
    sequence = _ids(resync.tok, "<s>12+30=42</s>")
    check_sync_takes_effect(engine, model, lambda: optimizer_step(model, sequence))


@needs_vllm
def test_file_sync_writes_every_key_of_a_tied_model(resync, tmp_path, monkeypatch):
    """vLLM's in-place reload leaves the head stale when the file has no lm_head.weight
    (as save_pretrained writes a tied model): the file must hold it."""
    import rlvr.rollout.vllm.engine as vllm_engine

    engine, model = resync.engine, resync.model
    assert model.config.tie_word_embeddings
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    written = {}
    real_write = vllm_engine._write_weights

    def spy(m, workdir):
        directory = real_write(m, workdir)
        written.update(load_file(str(Path(directory) / "model.safetensors")))
        return directory

    monkeypatch.setattr(vllm_engine, "_write_weights", spy)
    engine.sync_mode = "file"
    with torch.no_grad():  # the embedding only: in a tied model, the head as well
        model.model.embed_tokens.weight.add_(
            0.05 * torch.randn_like(model.model.embed_tokens.weight))
    engine.sync_weights(model)
    state = model.state_dict()
    assert set(written) == set(state)
    assert all(torch.equal(written[k], state[k]) for k in state)
    assert torch.equal(written["lm_head.weight"], written["model.embed_tokens.weight"])


@needs_vllm
@pytest.mark.parametrize("mode", ["file", "direct"])
def test_tied_embedding_update_reaches_the_head(resync, mode):
    engine, model = resync.engine, resync.model
    engine.sync_mode = mode
    weight = model.model.embed_tokens.weight

    def move():
        with torch.no_grad():
            weight.add_(0.05 * torch.randn_like(weight))

    check_sync_takes_effect(engine, model, move, rounds=1)


# -- syncs that fail --------------------------------------------------------------

@needs_vllm
@pytest.mark.parametrize("mode", ["file", "direct"])
def test_sync_that_does_not_reach_vllm_raises(resync, monkeypatch, mode):
    engine, model, backend = resync.engine, resync.model, resync.engine.backend
    engine.sync_mode = mode
    unchanged = lambda *args: {"version": backend.version, "seconds": 0.0}  # noqa: E731
    monkeypatch.setattr(backend, "reload_from", unchanged)
    monkeypatch.setattr(backend, "load_tensors", unchanged)
    optimizer_step(model, _ids(resync.tok, "<s>7*8=56</s>"))
    version = engine.version
    with pytest.raises(WeightSyncError, match=f"version went {version} -> {version}"):
        engine.sync_weights(model)
    assert engine.version == version == backend.version


@needs_vllm
@pytest.mark.parametrize("mode", ["file", "direct"])
def test_sync_that_loads_old_weights_fails_the_probe(resync, monkeypatch, tmp_path, mode):
    """The version moves but vLLM got the weights from before the update: the probe,
    vLLM's log-probs against the trainer's, stops the run."""
    engine, model, backend = resync.engine, resync.model, resync.engine.backend
    engine.sync_mode = mode
    engine.generate(PROMPTS[:1], 1, SamplingParams(max_new_tokens=12, seed=1))  # the probe
    old = {k: v.detach().clone() for k, v in model.state_dict().items()}
    save_file(old, str(tmp_path / "model.safetensors"))
    real_reload, real_load = backend.reload_from, backend.load_tensors
    monkeypatch.setattr(backend, "reload_from",
                        lambda path, version=None: real_reload(str(tmp_path)))
    monkeypatch.setattr(backend, "load_tensors",
                        lambda named, version=None: real_load(list(old.items())))
    optimizer_step(model, _ids(resync.tok, "<s>7*8=56</s>"))
    version = engine.version
    with pytest.raises(WeightSyncError, match="differ from the trainer's.*probe"):
        engine.sync_weights(model)
    assert backend.version == version + 1  # the load happened, with the wrong weights
    # and vLLM indeed still samples from the old weights: the error was right
    sequences = scored_sequences(engine, n=1)
    assert engine_vs_trainer(engine, model, sequences) > 1e-2


@needs_vllm
def test_sync_whose_load_raises_is_a_weight_sync_error(resync, monkeypatch):
    def broken(path, version=None):
        raise OSError("disk full")

    monkeypatch.setattr(resync.engine.backend, "reload_from", broken)
    resync.engine.sync_mode = "file"
    with pytest.raises(WeightSyncError, match="weight sync to vLLM failed.*disk full"):
        resync.engine.sync_weights(resync.model)


# -- models vLLM cannot load ------------------------------------------------------

@needs_vllm
def test_unknown_architecture_is_refused_naming_the_directory(tmp_path):
    from rlvr.rollout.vllm.runner import RunnerSettings, VLLMLoadError, VLLMRunner

    bad = tmp_path / "odd-model"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({"architectures": ["NoSuchForCausalLM"]}))
    began = time.perf_counter()
    with pytest.raises(VLLMLoadError) as caught:
        VLLMRunner(RunnerSettings(model=str(bad)))
    assert time.perf_counter() - began < 3.0  # before vLLM starts (that takes seconds)
    assert str(bad) in str(caught.value) and "NoSuchForCausalLM" in str(caught.value)
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(VLLMLoadError, match=f"{empty}: no config.json"):
        VLLMRunner(RunnerSettings(model=str(empty)))


@needs_vllm
def test_server_refuses_an_unknown_architecture(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "odd-model"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({"architectures": ["NoSuchForCausalLM"]}))
    done = subprocess.run([sys.executable, "-m", "rlvr.rollout.vllm.server", "--model",
                           str(bad), "--port", str(free_port())],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert f"error: vLLM cannot load {bad}" in done.stderr and "ready" not in done.stdout


# -- a second in-process engine (keep after every user of the module's engine) --

@needs_vllm
@pytest.mark.parametrize("mode", ["file", "direct"])
def test_untied_head_update_is_synced(colocated, tmp_path, mode):
    """A second colocated engine in this process. Last of the tests that use the module's
    engine: freeing one in-process vLLM tears down vLLM's process-wide parallel state, and
    a vLLM still alive in the process then fails every call (vLLM 0.32: "pipeline model parallel group is not initialized")."""
    from transformers import LlamaForCausalLM

    gc.collect()  # the other parametrization's engine is gone before this one starts
    tok = colocated.tok  # built after the module's engine: vLLM is warm, this starts fast
    config = replace_config(colocated.model.config, tie_word_embeddings=False)
    torch.manual_seed(1)
    model = LlamaForCausalLM(config).eval()
    assert model.lm_head.weight.data_ptr() != model.model.embed_tokens.weight.data_ptr()
    engine = VLLMEngine(model, tok, VLLMSettings(max_model_len=128, kv_cache_gb=0.25,
                                                 sync=mode, sync_dir=str(tmp_path)))
    try:
        assert engine.sync_mode == mode

        def move():  # the head only
            with torch.no_grad():
                model.lm_head.weight.add_(0.1 * torch.randn_like(model.lm_head.weight))

        check_sync_takes_effect(engine, model, move, rounds=1)
    finally:
        engine.close()
        del engine
        gc.collect()  # freed now, not in the middle of a later test's vLLM calls
    assert list(tmp_path.iterdir()) == []  # close() removed its workdir


def replace_config(config, **changes):
    return type(config)(**{**config.to_dict(), **changes})


# -- a colocated training run -------------------------------------------------------

@pytest.fixture(scope="module")
def colocated_run(tmp_path_factory, colocated):
    """Two RL steps with engine=vllm colocated (after the module's engine: vLLM is warm)."""
    from rlvr.training.run import train

    root = tmp_path_factory.mktemp("vllm-run")
    cfg = tiny_config(*TRAIN_SHAPE, "sampling.engine=vllm", "steps=2",
                      "sampling.vllm.kv_cache_gb=0.25",
                      # the tiny model has 64 positions; vLLM refuses a longer max_model_len
                      f"sampling.vllm.max_model_len={TRAIN_MODEL['max_positions']}",
                      f"sampling.vllm.sync_dir={root / 'sync'}")
    summary = train(cfg, root / "run")
    metrics = [json.loads(line) for line in (root / "run" / "metrics.jsonl").read_text()
               .splitlines()]
    return SimpleNamespace(summary=summary, metrics=metrics, sync_dir=root / "sync")


@needs_vllm
def test_colocated_run_logs_sync_time_mismatch_and_correction(colocated_run):
    assert [m["step"] for m in colocated_run.metrics] == [1, 2]
    for m in colocated_run.metrics:
        assert m["time/weight_sync"] > 0
        # the run samples from the weights it trains: vLLM's numbers are the trainer's
        # to float rounding, so the (tis) correction weighs every token by ~1
        assert 0 <= m["mismatch/abs_dlogprob"] < 1e-3
        assert 0 <= m["mismatch/kl"] < 1e-5
        assert m["mismatch/ratio_min"] == pytest.approx(1.0, abs=1e-2)
        assert m["mismatch/ratio_max"] == pytest.approx(1.0, abs=1e-2)
        assert m["correction/weight_mean"] == pytest.approx(1.0, abs=1e-2)
        assert m["correction/clipped_frac"] == 0.0
    assert colocated_run.summary["steps"] == 2


@needs_vllm
def test_colocated_run_releases_its_sync_directory(colocated_run):
    assert list(colocated_run.sync_dir.iterdir()) == []
