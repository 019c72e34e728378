"""The update's statistics: each averaged over the optimizer steps that measured it, and
the same keys on every metrics line whether or not any row had a signal."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import rlvr.training.loop as loop
from rlvr.training.algorithm import build_algorithm
from rlvr.training.run import train
from train_helpers import plugin_reward, tiny_config

NO_SIGNAL = {"policy_loss": 0.0, "loss": 0.0}  # what a minibatch without signal reports
MEASURED = {"clip_frac_low": 0.1, "clip_frac_high": 0.2, "clip_frac": 0.3,
            "dual_clip_frac": 0.0, "ratio_mean": 1.1, "ratio_min": 0.9, "ratio_max": 1.4,
            "approx_kl": 0.01, "policy_loss": -0.5, "loss": -0.6, "entropy": 1.5}


def _update(monkeypatch, minibatch_stats):
    """policy_update over 2 minibatches whose steps report `minibatch_stats`."""
    canned = iter(minibatch_stats)
    monkeypatch.setattr(loop, "minibatch_step", lambda *args: {**next(canned)})
    cfg = tiny_config("algorithm.minibatches=2")
    t = SimpleNamespace(cfg=cfg, model=torch.nn.Linear(1, 1),
                        algo=build_algorithm(cfg.algorithm, cfg.sampling.max_new_tokens))
    batch = SimpleNamespace(input_ids=torch.zeros(8, 3), rows=lambda index: None)
    return loop.policy_update(t, 1, batch, torch.ones(8, 2), torch.zeros(8),
                              torch.zeros(8, 2), None)


def test_statistics_average_over_the_minibatches_that_measured_them(monkeypatch):
    stats = _update(monkeypatch, [{**NO_SIGNAL, "rows_trained": 0.0, "grad_norm": 0.0},
                                  {**MEASURED, "rows_trained": 4.0, "grad_norm": 2.0}])
    # measured by one minibatch of two: its own values, not halved
    assert stats["entropy"] == 1.5 and stats["clip_frac"] == 0.3
    assert stats["ratio_min"] == 0.9 and stats["approx_kl"] == 0.01
    # reported by both: the mean over both optimizer steps
    assert stats["loss"] == -0.3 and stats["rows_trained"] == 2.0 and stats["grad_norm"] == 1.0


def test_a_step_without_signal_reports_the_same_keys(monkeypatch):
    measured = _update(monkeypatch, [{**MEASURED, "rows_trained": 4.0, "grad_norm": 2.0}] * 2)
    idle = _update(monkeypatch, [{**NO_SIGNAL, "rows_trained": 0.0, "grad_norm": 0.0}] * 2)
    assert list(idle) == list(measured)
    # nothing measured: the empty-batch values (nothing clipped, ratio 1, no tokens)
    assert idle["clip_frac"] == 0.0 and idle["ratio_mean"] == 1.0 and idle["entropy"] == 0.0
    assert idle["rows_trained"] == 0.0


def _keys(run_dir):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [set(json.loads(line)) for line in lines]


def test_every_metrics_line_has_the_same_keys(tmp_path, monkeypatch):
    """"exact": an untrained model gets every sum wrong, so no row has a signal; the
    length reward gives some. Each run logs the same keys on every line, and both the
    same update statistics (the length reward adds its component, reward/length)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent),
                                                      os.environ.get("PYTHONPATH", "")]))
    # audit every 2 of 3 steps: the audit's count is logged on the steps between too
    common = ("steps=3", "sft.steps=0", "algorithm.minibatches=2", "audit_every=2")
    train(tiny_config(*common, "reward.verifier=exact"), tmp_path / "idle")
    train(tiny_config(*common, *plugin_reward("train_helpers:LengthVerifier")),
          tmp_path / "some")
    idle, some = _keys(tmp_path / "idle"), _keys(tmp_path / "some")
    assert all(keys == idle[0] for keys in idle) and all(keys == some[0] for keys in some)
    assert some[0] - idle[0] == {"reward/length"} and idle[0] <= some[0]
    assert {"entropy", "clip_frac", "ratio_mean", "approx_kl"} <= some[0]
    assert "kl" not in some[0]  # no reference model at kl_beta = 0
    assert {"update/path", "audit/warnings"} <= idle[0]


@pytest.mark.parametrize("extra", [[], ["algorithm.kl_beta=0.1"]])
def test_unmeasured_values_come_from_the_loss_itself(extra):
    cfg = tiny_config(*extra)
    t = SimpleNamespace(algo=build_algorithm(cfg.algorithm, cfg.sampling.max_new_tokens))
    values = loop.unmeasured_stats(t, with_kl=bool(extra))
    assert set(values) == {*t.algo.policy_loss.stat_reductions, "entropy",
                           *(["kl"] if extra else [])}
    assert values["ratio_min"] == values["ratio_max"] == 1.0
