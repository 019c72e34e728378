"""The vLLM engine in server mode (`rlvr vllm-serve`'s server in a subprocess, the engine
over HTTP): syncs at start and after updates, servers that refuse a trainer, a server
that dies mid-run (the run stops with an error naming the URL and resumes from its
checkpoint), and `rlvr eval --engine vllm` against `--engine hf`.

Needs vllm (`make vllm-env`; run with `make test-vllm`); the flag checks of `rlvr eval`
run in rlvr's main environment too, the rest skip there."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import torch

from rlvr.rollout.base import SamplingParams
from rlvr.rollout.vllm.client import VLLMServerError
from rlvr.rollout.vllm.engine import VLLMEngine, VLLMSettings
from rlvr.rollout.vllm.env import vllm_importable
from rlvr.training.tiny import TinyModelSpec, char_tokenizer, tiny_llama
from train_helpers import tiny_config
from vllm_helpers import (ENGINE_SHAPE, PROMPTS, TRAIN_MODEL, VLLM_MISSING, Server,
                          check_sync_takes_effect, forward_logprobs, optimizer_step)

needs_vllm = pytest.mark.skipif(not vllm_importable(), reason=VLLM_MISSING)

def _ids(tok, text):
    return tok(text, add_special_tokens=False)["input_ids"]


def replace_config(config, **changes):
    return type(config)(**{**config.to_dict(), **changes})


# -- server mode --------------------------------------------------------------------

@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server (restarted on its port by the fault test) serving a tiny model of the
    trainer's shape with weights of its own (seed 7): every engine must send its own."""
    if not vllm_importable():
        pytest.skip(VLLM_MISSING)
    root = tmp_path_factory.mktemp("vllm-server")
    tok = char_tokenizer()
    served = tiny_llama(tok, TinyModelSpec(**TRAIN_MODEL), seed=7)
    served.save_pretrained(root / "model")
    tok.save_pretrained(root / "model")
    handle = Server(root / "model", root / "server.log", TRAIN_MODEL["max_positions"])
    try:
        yield handle.start()
    finally:
        handle.stop()


def _named_architecture(model):
    """As a model loaded from a directory has it (a freshly built one has None)."""
    model.config.architectures = [type(model).__name__]
    return model


@needs_vllm
def test_server_engine_syncs_at_start_generates_and_follows_updates(server, tmp_path):
    tok = char_tokenizer()
    model = _named_architecture(tiny_llama(tok, TinyModelSpec(**TRAIN_MODEL), seed=0))
    engine = VLLMEngine(model, tok, VLLMSettings(mode="server", url=server.url,
                                                 sync_dir=str(tmp_path), timeout_s=60))
    try:
        assert engine.sync_mode == "file"
        # the server started with other weights: the engine's first sync replaced them
        out = engine.generate(PROMPTS, 2, SamplingParams(max_new_tokens=10, seed=4))
        assert [len(g) for g in out] == [2, 2, 2]
        for group in out:
            for c in group:
                ours = forward_logprobs(model, c.prompt_ids, c.token_ids)
                assert float((torch.tensor(c.logprobs) - ours).abs().max()) < 1e-4
        sequence = _ids(tok, "<s>12+30=42</s>")
        check_sync_takes_effect(engine, model, lambda: optimizer_step(model, sequence))
    finally:
        engine.close()


@needs_vllm
def test_server_takes_a_model_built_in_memory(server, tmp_path):
    tok = char_tokenizer()
    model = tiny_llama(tok, TinyModelSpec(**TRAIN_MODEL), seed=0)
    assert model.config.architectures is None
    engine = VLLMEngine(model, tok, VLLMSettings(mode="server", url=server.url,
                                                 sync_dir=str(tmp_path), timeout_s=60))
    engine.close()


@needs_vllm
def test_server_refuses_a_trainer_with_another_vocabulary(server, tmp_path):
    from transformers import LlamaForCausalLM

    tok = char_tokenizer()
    base = tiny_llama(tok, TinyModelSpec(**TRAIN_MODEL))
    model = _named_architecture(LlamaForCausalLM(replace_config(base.config, vocab_size=base.config.vocab_size + 8)))
    with pytest.raises(ValueError, match=f"the vLLM server at {server.url} serves .* "
                                         f"vocabulary of {base.config.vocab_size}"):
        VLLMEngine(model, tok, VLLMSettings(mode="server", url=server.url,
                                            sync_dir=str(tmp_path)))


def _steps(run_dir: Path) -> list[int]:
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [json.loads(line)["step"] for line in lines]


@needs_vllm
def test_server_dying_mid_run_stops_it_and_a_resume_completes_it(server, tmp_path,
                                                                monkeypatch):
    import rlvr.training.run as run_module
    from rlvr.training.run import train

    # the trainer's model from a directory, as a real run's (config.architectures set);
    # its own weights (seed 0), not the server's
    tok = char_tokenizer()
    trainer_model = tiny_llama(tok, TinyModelSpec(**TRAIN_MODEL), seed=0)
    trainer_model.save_pretrained(tmp_path / "model")
    tok.save_pretrained(tmp_path / "model")
    cfg = tiny_config(f"model.path={tmp_path / 'model'}", "sampling.engine=vllm",
                      "sampling.vllm.mode=server",
                      f"sampling.vllm.url={server.url}", "sampling.vllm.timeout_s=60",
                      f"sampling.vllm.sync_dir={tmp_path / 'sync'}", "steps=3",
                      "checkpoint_every=1", "keep_checkpoints=0")
    real_step = run_module.rl_step

    def step_with_crash(trainer, step):
        if step == 2:
            server.kill()  # the server dies between step 1 and step 2's generation
        return real_step(trainer, step)

    run_dir = tmp_path / "run"
    monkeypatch.setattr(run_module, "rl_step", step_with_crash)
    with pytest.raises(VLLMServerError, match=re.escape(server.url)):
        train(cfg, run_dir)
    assert _steps(run_dir) == [1]
    assert (run_dir / "checkpoints" / "step-000001").is_dir()
    assert not (run_dir / "summary.json").exists()

    monkeypatch.setattr(run_module, "rl_step", real_step)
    server.start()  # same port: the run's config names the URL
    summary = train(cfg, run_dir, resume=True)
    assert summary["steps"] == 3
    assert _steps(run_dir) == [1, 2, 3]
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text()
               .splitlines()]
    assert all(m["mismatch/abs_dlogprob"] < 1e-3 for m in metrics)


# -- rlvr eval --engine vllm ----------------------------------------------------------

def _eval_tasks(tmp_path: Path) -> Path:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"prompt": p, "reference": "2", "verifier": "exact"})
                             + "\n" for p in ("1+1=", "7*3=", "9-4=", "12+30=")))
    return tasks


def test_eval_engine_flags_are_checked_before_loading(tmp_path):
    """--vllm-url without --engine vllm, and a colocated vllm where vllm is absent,
    exit 2 with the reason (no model is loaded: the model path does not exist)."""
    from cli_helpers import run_cli

    tasks = _eval_tasks(tmp_path)
    missing = str(tmp_path / "no-model")
    result = run_cli("eval", missing, "--dataset", str(tasks), "--vllm-url",
                     "http://127.0.0.1:1", timeout=120)
    assert result.returncode == 2 and "--vllm-url needs --engine vllm" in result.stderr
    if not vllm_importable():
        result = run_cli("eval", missing, "--dataset", str(tasks), "--engine", "vllm",
                         timeout=120)
        assert result.returncode == 2 and "make vllm-env" in result.stderr


@needs_vllm
def test_eval_with_vllm_gives_the_hf_engines_greedy_answers(tmp_path):
    """`rlvr eval --engine vllm` (colocated, in its own process) on a task file: the same
    greedy completions, verdicts and accuracy as `--engine hf` on the same model."""
    from cli_helpers import run_cli

    from rlvr.training.tiny import build_tiny

    model_dir = build_tiny(tmp_path / "model", TinyModelSpec(**ENGINE_SHAPE), seed=3)
    tasks = _eval_tasks(tmp_path)
    results = {}
    for engine in ("hf", "vllm"):
        out = tmp_path / f"{engine}.json"
        result = run_cli("eval", str(model_dir), "--dataset", str(tasks), "--engine", engine,
                         "--max-new-tokens", "8", "--workers", "1", "--quiet",
                         "--output", str(out), timeout=300)
        assert result.returncode == 0, result.stderr[-2000:]
        results[engine] = json.loads(out.read_text())
    hf, vllm = results["hf"], results["vllm"]
    assert vllm["config"]["engine"] == "vllm" and hf["config"]["engine"] == "hf"

    def answers(data):
        return [(a["id"], a["completion"], a["verdict"]["passed"]) for a in data["attempts"]]
    assert answers(vllm) == answers(hf) and len(answers(hf)) == 4
    assert any(text for _, text, _ in answers(hf))  # something was generated
    assert vllm["metrics"]["greedy/accuracy"] == hf["metrics"]["greedy/accuracy"]
