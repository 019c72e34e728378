"""Asynchronous rollouts (rollout.max_staleness >= 1) with a vLLM server as the producer's
engine: the config accepts server mode only; the producer names the weights it syncs and
checks the server sampled with them; the trainer builds only an hf engine (it evaluates,
it never writes to the server). End to end: a K = 1 `rlvr train` against a server in a
subprocess, whose every group was sampled by the server holding the version the group
reports, and a second writer of the server's weights mid-run stops the run with exit 3
naming the producer.

The end-to-end tests need vllm (`make vllm-env`; run with `make test-vllm`); the checks
above them run in rlvr's main environment too, the rest skip there with the reason."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from safetensors.torch import load_file

from rlvr.config import ConfigError
from rlvr.rollout.vllm.engine import VLLMEngine, WeightSyncError
from rlvr.rollout.vllm.env import vllm_importable
from rlvr.training.config_rollout import trainer_engine
from rlvr.training.producer import Producer, SamplerMismatch
from rlvr.training.staleness import SampledGroup
from rlvr.training.tiny import TinyModelSpec, char_tokenizer, tiny_llama
from async_helpers import tests_on_pythonpath
from train_helpers import TINY_OVERRIDES, plugin_reward, tiny_config
from vllm_helpers import TRAIN_MODEL, VLLM_MISSING, Server

needs_vllm = pytest.mark.skipif(not vllm_importable(), reason=VLLM_MISSING)
SERVER_MODE = ("sampling.engine=vllm", "sampling.vllm.mode=server")


# -- without vLLM: the config, the checks, the records --------------------------------

def test_k1_takes_a_vllm_server_and_refuses_a_colocated_vllm():
    cfg = tiny_config("rollout.max_staleness=1", *SERVER_MODE)
    assert cfg.rollout.asynchronous and trainer_engine(cfg) == "hf"
    assert trainer_engine(tiny_config(*SERVER_MODE)) == "vllm"  # K = 0 samples itself
    tiny_config("sampling.engine=vllm")  # colocated is fine synchronously
    with pytest.raises(ConfigError, match=r"sampling\.vllm\.mode.*max_staleness=1.*"
                                          r"mode=server"):
        tiny_config("rollout.max_staleness=1", "sampling.engine=vllm")


def test_several_producers_are_refused_with_one_vllm_server():
    tiny_config("rollout.max_staleness=1", "rollout.producers=2")  # hf: one each
    tiny_config("rollout.max_staleness=1", "rollout.producers=1", *SERVER_MODE)
    with pytest.raises(ConfigError, match=r"rollout\.producers.*max_staleness=1.*one vLLM"):
        tiny_config("rollout.max_staleness=1", "rollout.producers=2", *SERVER_MODE)


def test_k1_refuses_an_engine_the_producer_cannot_run(monkeypatch):
    from rlvr.rollout import factory

    monkeypatch.setitem(factory.ENGINES, "mine", "rlvr.rollout.hf:HFRolloutEngine")
    tiny_config("sampling.engine=mine")
    with pytest.raises(ConfigError, match=r"sampling\.engine.*max_staleness=1"):
        tiny_config("rollout.max_staleness=1", "sampling.engine=mine")


def _vllm_engine(version: int, served: dict | None) -> VLLMEngine:
    """The engine's checks on what its backend reports, without a server."""
    engine = object.__new__(VLLMEngine)
    engine.version, engine.backend = version, SimpleNamespace(last_weights=served)
    engine.sampled_policy_version = None
    return engine


def test_the_engine_refuses_weights_another_writer_loaded():
    engine = _vllm_engine(4, {"version": 4, "policy_version": 7})
    assert engine._served_load("generation") == {"version": 4, "policy_version": 7}
    assert _vllm_engine(4, None)._served_load("generation") is None  # a server that
    engine = _vllm_engine(4, {"version": 5, "policy_version": None})  # does not say
    with pytest.raises(WeightSyncError, match="vLLM's probe used weight load 5.*last sync "
                                              "was load 4: another writer"):
        engine._served_load("probe")


def _producer(loaded: int, engine) -> SimpleNamespace:
    return SimpleNamespace(loaded=loaded, engine=engine)


def test_the_producer_refuses_a_draw_the_server_sampled_with_other_weights():
    served = SimpleNamespace(sampled_policy_version=3)
    assert Producer._sampled_version(_producer(3, served), 5) == 3
    with pytest.raises(SamplerMismatch, match="step 5's draw with policy version 3.*"
                                              "synced version 4"):
        Producer._sampled_version(_producer(4, served), 5)
    with pytest.raises(SamplerMismatch, match="policy version None"):  # a server that
        Producer._sampled_version(_producer(4, SimpleNamespace(  # does not say
            sampled_policy_version=None)), 5)
    # an engine sampling the producer's own copy (hf) reports nothing
    assert Producer._sampled_version(_producer(4, SimpleNamespace()), 5) is None


def test_rollout_lines_carry_what_sampled_each_group():
    from rlvr.training.loop import Groups, rollout_lines
    from rlvr.data.records import TaskRecord
    from rlvr.rollout.base import Completion
    from rlvr.verifiers.base import Verdict

    records = [TaskRecord("1+1=", "2", "exact", "a"), TaskRecord("2+2=", "4", "exact", "b")]
    completion = Completion([1], [2], [-0.5], "2", "eos")
    groups = Groups(records, [[completion], [completion]],
                    [[Verdict.correct()], [Verdict.wrong()]], torch.zeros(2, 1), {},
                    sampled=[SampledGroup(0, 0, 3, 2, served_version=2).sampled_by(),
                             SampledGroup(1, 1, 3, 1).sampled_by()])
    lines = rollout_lines(3, groups, torch.zeros(2, 1), torch.zeros(2, 1))
    assert [(line["policy_version"], line.get("server_policy_version")) for line in lines] \
        == [(2, 2), (1, None)]


# -- end to end: a vLLM server in a subprocess ---------------------------------------

STEPS = 4
PROBE = "<s>12+30=42</s>"


@pytest.fixture(autouse=True)
def _tests_importable(monkeypatch):
    """Verifier workers (the producer's too) import the test reward by name."""
    monkeypatch.setenv("PYTHONPATH", tests_on_pythonpath())


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A server with weights of its own (seed 7), and the trainer's model directory
    (seed 0; a real run's: config.architectures set): every run sends its own."""
    if not vllm_importable():
        pytest.skip(VLLM_MISSING)
    root = tmp_path_factory.mktemp("async-vllm")
    tok = char_tokenizer()
    for name, seed in (("served", 7), ("trainer", 0)):
        tiny_llama(tok, TinyModelSpec(**TRAIN_MODEL), seed=seed).save_pretrained(root / name)
        tok.save_pretrained(root / name)
    handle = Server(root / "served", root / "server.log", TRAIN_MODEL["max_positions"])
    try:
        yield SimpleNamespace(server=handle.start(), trainer=root / "trainer",
                              served=root / "served")
    finally:
        handle.stop()


def _train_args(served, run: Path, sync: Path) -> list[str]:
    return ["train", "--run-dir", str(run), "--quiet", *TINY_OVERRIDES,
            f"model.path={served.trainer}", *SERVER_MODE,
            f"sampling.vllm.url={served.server.url}", "sampling.vllm.timeout_s=120",
            f"sampling.vllm.sync_dir={sync}", "rollout.max_staleness=1",
            "rollout.producer_timeout_s=300", f"steps={STEPS}", "checkpoint_every=1",
            "keep_checkpoints=0", "data.eval_size=2",
            *plugin_reward("train_helpers:LengthVerifier")]


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _server_vs_checkpoint(url: str, checkpoint: Path) -> float:
    """Mean |dlogprob| on a probe between the server's weights and a checkpoint's, the
    latter by the model's own forward."""
    from transformers import AutoModelForCausalLM

    from rlvr.rollout.vllm.client import VLLMClient

    model = AutoModelForCausalLM.from_pretrained(checkpoint, torch_dtype=torch.float32)
    ids = char_tokenizer()(PROBE, add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].float()
    ours = torch.log_softmax(logits[:-1], dim=-1).gather(1, torch.tensor(ids[1:])[:, None])
    theirs = torch.tensor(VLLMClient(url).score([ids], [1])[0])
    return float((theirs - ours[:, 0]).abs().mean())


@needs_vllm
def test_k1_run_samples_every_group_with_the_version_it_reports(served, tmp_path):
    from rlvr.cli.exit_codes import OK
    from rlvr.cli.main import main
    from rlvr.rollout.vllm.client import VLLMClient

    run, sync = tmp_path / "run", tmp_path / "sync"
    assert main(_train_args(served, run, sync)) == OK
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == STEPS and summary["rollout/path"] == "vllm"
    metrics = _lines(run / "metrics.jsonl")
    assert [m["step"] for m in metrics] == list(range(1, STEPS + 1))
    P = tiny_config().sampling.prompts_per_step
    for m in metrics:
        assert m["staleness/max"] <= 1 and m["async/dropped_groups"] == 0
        assert m["staleness/lag_0"] + m["staleness/lag_1"] == P
    # every attempt: sampled within the bound, by the server holding the version its
    # group reports (the server's own record of its weights, sent with the samples)
    rows = _lines(run / "rollouts.jsonl")
    assert len(rows) == STEPS * P * tiny_config().sampling.group_size
    for row in rows:
        assert 0 <= (row["step"] - 1) - row["policy_version"] <= 1, row
        assert row["server_policy_version"] == row["policy_version"], row
    assert {row["policy_version"] for row in rows} >= {0, STEPS - 2}  # it followed
    # the server's name for its weights is true: they are that checkpoint's, and no
    # other's (a checkpoint = the version the step published)
    holds = VLLMClient(served.server.url).health()["policy_version"]
    assert holds is not None and max(r["policy_version"] for r in rows) <= holds <= STEPS
    checkpoints = run / "checkpoints"
    assert _server_vs_checkpoint(served.server.url, checkpoints / f"step-{holds:06d}") < 1e-4
    mine = load_file(checkpoints / f"step-{holds:06d}" / "model.safetensors")
    others = [step for step in range(STEPS + 1) if not all(
        torch.equal(t, load_file(checkpoints / f"step-{step:06d}" / "model.safetensors")[k])
        for k, t in mine.items())]
    assert others  # training moved the weights
    for step in others:
        assert _server_vs_checkpoint(served.server.url,
                                     checkpoints / f"step-{step:06d}") > 1e-3, step
    assert list(sync.iterdir()) == []  # the producer's weight files went with it


@needs_vllm
def test_a_second_writer_of_the_servers_weights_stops_the_run_naming_the_producer(
        served, tmp_path, monkeypatch, capsys):
    import rlvr.training.run as run_module
    from rlvr.cli.exit_codes import FAULT
    from rlvr.cli.main import main
    from rlvr.rollout.vllm.client import VLLMClient

    real_step = run_module.rl_step

    def step_with_a_second_writer(trainer, number):
        if number == 2:  # the producer must sync version 2 later: it finds this load
            VLLMClient(served.server.url).reload_from(str(served.served))
        return real_step(trainer, number)

    monkeypatch.setattr(run_module, "rl_step", step_with_a_second_writer)
    run = tmp_path / "run"
    assert main(_train_args(served, run, tmp_path / "sync")) == FAULT
    err = capsys.readouterr().err
    assert "rollout producer (pid" in err and "WeightSyncError" in err, err[-3000:]
    assert "another writer" in err and f"rlvr train --resume {run}" in err
    assert max(m["step"] for m in _lines(run / "metrics.jsonl")) < STEPS
