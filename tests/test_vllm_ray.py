"""A vLLM server placed as a Ray actor (rlvr.rollout.vllm.ray_servers) serves the engine's server
mode: the trainer's weights reach it and its samples' log-probs are the trainer's.

Needs Ray (`pip install -e '.[ray]'`) in this environment and a vLLM environment for the
server (`make vllm-env`); skips with the reason otherwise. Local Ray, 2 CPUs, loopback."""

from __future__ import annotations

import pytest
import torch

from rlvr.rollout.base import SamplingParams
from rlvr.rollout.vllm.env import find_vllm_python
from rlvr.training.tiny import TinyModelSpec, build_tiny, char_tokenizer, tiny_llama
from vllm_helpers import ENGINE_SHAPE, PROMPTS, forward_logprobs, optimizer_step

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[ray]')")
pytestmark = pytest.mark.skipif(find_vllm_python() is None,
                                reason="no vLLM environment (make vllm-env)")


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def served(tmp_path_factory, local_ray):
    from rlvr.rollout.vllm.ray_servers import start_vllm_servers, stop_vllm_servers

    model_dir = build_tiny(tmp_path_factory.mktemp("model") / "tiny",
                           TinyModelSpec(**ENGINE_SHAPE), seed=5)
    servers = start_vllm_servers(str(model_dir), count=1, server_args=(
        "--max-model-len", "128", "--kv-cache-gb", "0.25"), timeout_s=300)
    yield servers[0]
    stop_vllm_servers(servers)


def test_engine_trains_against_a_server_placed_by_ray(served, tmp_path):
    from rlvr.rollout.vllm.engine import VLLMEngine, VLLMSettings

    assert served.url.startswith("http://127.0.0.1:")
    tok = char_tokenizer()
    model = tiny_llama(tok, TinyModelSpec(**ENGINE_SHAPE), seed=0).eval()  # not seed 5
    model.config.architectures = ["LlamaForCausalLM"]
    engine = VLLMEngine(model, tok, VLLMSettings(mode="server", url=served.url,
                                                 sync_dir=str(tmp_path)))
    try:  # the engine sent its own weights at start: samples score as the trainer's
        group = engine.generate(PROMPTS[:1], 2, SamplingParams(max_new_tokens=8, seed=1))[0]
        for c in group:
            ours = forward_logprobs(model, c.prompt_ids, c.token_ids)
            assert float((torch.tensor(c.logprobs) - ours).abs().max()) < 1e-4
        version = engine.version
        optimizer_step(model, group[0].prompt_ids + group[0].token_ids)
        engine.sync_weights(model)  # the probe check inside raises if it did not arrive
        assert engine.version == version + 1
        after = engine.generate(PROMPTS[:1], 1, SamplingParams(max_new_tokens=8, seed=2))[0][0]
        ours = forward_logprobs(model, after.prompt_ids, after.token_ids)
        assert float((torch.tensor(after.logprobs) - ours).abs().max()) < 1e-4
    finally:
        engine.close()


def test_a_server_that_cannot_start_says_why(tmp_path, local_ray):
    """An actor whose server exits at start (an architecture vLLM lacks) raises with the
    server's own error, not a hang."""
    from rlvr.rollout.vllm.ray_servers import start_vllm_servers

    bogus = tmp_path / "no-model"
    bogus.mkdir()
    (bogus / "config.json").write_text('{"architectures": ["NoSuchForCausalLM"]}')
    with pytest.raises(Exception, match="did not start(.|\\n)*NoSuchForCausalLM"):
        start_vllm_servers(str(bogus), timeout_s=120)
