"""`reward.backend: remote`: a tiny training run graded by `rlvr serve` gets the rewards
the local process pool gives the same completions; bad settings and an unreachable
server fail before any model is built, naming the field and the URL."""

from __future__ import annotations

import json

import pytest
import torch

from rlvr.config import ConfigError
from rlvr.serve.remote_pool import RemoteVerifierPool
from rlvr.training.rewards import check_reward_backend
from rlvr.training.run import train
from rlvr.verifiers.pool import Case, VerifierPool
from serve_helpers import Server
from train_helpers import plugin_reward, tiny_config

TOKEN = "train-token"


@pytest.fixture(scope="module")
def server():
    srv = Server("--workers", "1", "--preload", "", "--plugin", "train_helpers:LengthVerifier",
                 token=TOKEN)
    yield srv
    assert srv.stop() == 0


def test_remote_rewards_are_the_process_pools(server, tmp_path):
    cfg = tiny_config("steps=2", *plugin_reward("train_helpers:LengthVerifier"),
                      "reward.backend=remote", f"reward.remote_urls=[{server.url}]",
                      f"reward.remote_token={TOKEN}")
    train(cfg, tmp_path / "run")
    rollouts = [json.loads(x) for x in (tmp_path / "run/rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 2 * 4 * 2  # steps x prompts x samples
    cases = [Case("train_helpers:LengthVerifier", r["completion"], r["reference"],
                  prompt=r["prompt"]) for r in rollouts]
    with VerifierPool(workers=1, plugins=["train_helpers:LengthVerifier"]) as pool:
        local = pool.verify(cases)
    assert [r["verdict"] for r in rollouts] == [v.to_dict() for v in local]
    # rewards are float32 tensors in the trainer
    assert [r["reward"] for r in rollouts] == torch.tensor([v.score for v in local]).tolist()
    assert len({r["reward"] for r in rollouts}) > 1  # a reward that tells them apart


def test_remote_pool_keeps_order_and_sends_the_time_limit(server):
    cases = [Case("exact", f"#### {i}", str(i if i % 2 else i + 1)) for i in range(40)]
    cases.append(Case("exact", "1", {"bad": 1}))
    cases.append(Case("exact", "1", object()))  # not JSON: an error for it alone
    with RemoteVerifierPool([server.url], token=TOKEN, timeout_s=3.0, batch_size=7) as pool:
        verdicts = pool.start().verify(cases)
    assert [v.passed for v in verdicts[:40]] == [bool(i % 2) for i in range(40)]
    assert verdicts[40].is_invalid and verdicts[41].reason == "error"
    with VerifierPool(workers=1) as local:
        assert [v.to_dict() for v in verdicts[:41]] == [
            {**v.to_dict(), "details": {**v.details, "error": "items[5]: " + v.details["error"]}}
            if v.is_invalid else v.to_dict() for v in local.verify(cases[:41])]


@pytest.mark.parametrize("overrides, field", [
    (["reward.backend=remote"], "reward.remote_urls"),
    (["reward.remote_urls=[http://127.0.0.1:9]"], "reward.remote_urls"),
    (["reward.backend=remote", "reward.remote_urls=[cpu-1:8000]"], "reward.remote_urls"),
])
def test_bad_remote_settings_are_named(overrides, field):
    with pytest.raises(ConfigError) as caught:
        tiny_config(*overrides)
    assert caught.value.field == field


def test_unreachable_server_or_wrong_token_fails_before_the_model(server):
    cfg = tiny_config("reward.backend=remote", "reward.remote_urls=[http://127.0.0.1:9]")
    with pytest.raises(ConfigError, match="127.0.0.1:9.*unreachable") as caught:
        check_reward_backend(cfg.reward)
    assert caught.value.field == "reward.remote_urls"
    cfg = tiny_config("reward.backend=remote", f"reward.remote_urls=[{server.url}]",
                      "reward.remote_token=wrong")
    with pytest.raises(ConfigError, match="refused the token"):
        check_reward_backend(cfg.reward)
