"""Gradient accumulation: a minibatch run in micro-batches gives the gradient and the
statistics of one pass over it, for every aggregation (rlvr.training.accumulate)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch

from rlvr.rollout.base import SamplingParams
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.training.accumulate import combine_stats, micro_batches
from rlvr.training.algorithm import build_algorithm
from rlvr.training.batch import pack
from rlvr.training.loop import accumulate_gradients
from rlvr.training.run import train
from rlvr.training.tiny import TinyModelSpec, char_tokenizer, tiny_llama
from rlvr.update_paths.paths import ReplayPath, UpdatePath
from train_helpers import plugin_reward, pop_seams, tiny_config

ROWS = 16  # 4 prompts x 4 samples


@pytest.fixture(scope="module", params=[False, True], ids=["forward", "replay"])
def sampled(request):
    """A tiny model and 16 sampled rows of different lengths; with kept activations
    (the replayed forward) or without."""
    torch.manual_seed(0)
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, TinyModelSpec(hidden_size=32, intermediate_size=64,
                                                num_layers=2, num_heads=2))
    engine = HFRolloutEngine(model, tokenizer)
    engine.eos_ids = sorted({*engine.eos_ids, tokenizer.convert_tokens_to_ids("e")})
    params = SamplingParams(max_new_tokens=12, temperature=1.0, seed=3,
                            keep_activations=request.param)
    groups = engine.generate(["abc", "hello wor", "x", "12+34="], 4, params)
    batch = pack([c for g in groups for c in g], tokenizer.pad_token_id, torch.device("cpu"))
    assert (batch.activations is not None) == request.param
    generator = torch.Generator().manual_seed(1)
    noise = lambda: 0.3 * torch.randn(batch.mask.shape, generator=generator)  # noqa: E731
    advantages = torch.randn(ROWS, generator=generator)
    advantages[[1, 6, 7]] = 0.0  # rows without signal
    return SimpleNamespace(model=model, batch=batch, advantages=advantages,
                           # pi_old and pi_ref away from pi_theta: ratios clip, KL > 0
                           old=batch.old_logprobs + noise(), ref=batch.old_logprobs + noise())


def _run(sampled, aggregation, extra, micro):
    cfg = tiny_config(f"algorithm.aggregation={aggregation}", *extra, *micro)
    replayed = sampled.batch.activations is not None
    t = SimpleNamespace(cfg=cfg, model=sampled.model,
                        algo=build_algorithm(cfg.algorithm, cfg.sampling.max_new_tokens),
                        update=ReplayPath(UpdatePath()) if replayed else UpdatePath())
    batch, mask = sampled.batch, sampled.batch.mask.float()
    ref = sampled.ref if cfg.algorithm.kl_beta > 0 else None
    rows = torch.arange(ROWS) if t.algo.terms else torch.nonzero(sampled.advantages).flatten()
    sampled.model.zero_grad(set_to_none=True)
    sampled.model.train()
    stats = accumulate_gradients(t, rows, batch, mask, t.algo.aggregate.normalizer(mask),
                                 sampled.advantages, sampled.old, ref)
    sampled.model.eval()
    # the forward that ran is the one asked for (replay where activations were kept)
    assert t.update.take_ran() == ("replay" if replayed else "plain")
    return stats, {n: p.grad.clone() for n, p in sampled.model.named_parameters()}


# Every aggregation, with and without the terms that touch every row; split by rows
# and by a token budget. (The replayed forward is exercised by the "replay" fixture.)
CASES = [(aggregation, extra, micro)
         for aggregation in ("token_mean", "sequence_mean", "constant")
         for extra, micro in (([], ["algorithm.micro_batch_rows=4"]),
                              (["algorithm.kl_beta=0.1", "algorithm.entropy_coef=0.05"],
                               ["algorithm.micro_batch_tokens=60"]))]


@pytest.mark.parametrize("aggregation,extra,micro", CASES,
                         ids=[f"{a}-{'terms' if e else 'surrogate'}" for a, e, _ in CASES])
def test_micro_batches_give_the_whole_minibatch_gradient_and_statistics(sampled, aggregation,
                                                                         extra, micro):
    whole_stats, whole = _run(sampled, aggregation, extra, [])
    parts_stats, parts = _run(sampled, aggregation, extra, micro)
    for name, grad in whole.items():
        torch.testing.assert_close(parts[name], grad, rtol=1e-5, atol=1e-7)
    assert parts_stats.keys() == whole_stats.keys()
    assert parts_stats == pytest.approx(whole_stats, rel=1e-5, abs=1e-7)
    # the statistics are not trivial: clipping happened, the loss is not 0
    assert 0 < whole_stats["clip_frac"] < 1 and whole_stats["loss"] != 0
    assert whole_stats["ratio_min"] < whole_stats["ratio_mean"] < whole_stats["ratio_max"]


def test_the_split_really_happens(sampled):
    tokens = sampled.batch.attention_mask.sum(1)
    assert len(micro_batches(torch.arange(ROWS), tokens, max_rows=4)) == 4
    assert len(micro_batches(torch.arange(ROWS), tokens, max_tokens=60)) >= 4


def test_micro_batches_by_hand():
    rows, tokens = torch.tensor([5, 2, 9, 4, 7]), torch.tensor([3, 4, 10, 2, 2])
    whole = micro_batches(rows, None)
    assert len(whole) == 1 and whole[0] is rows  # no limit: no copy
    assert [p.tolist() for p in micro_batches(rows, tokens, max_rows=2)] == \
        [[5, 2], [9, 4], [7]]
    # budget 7: 3 + 4 | 10 alone (over the budget) | 2 + 2
    assert [p.tolist() for p in micro_batches(rows, tokens, max_tokens=7)] == \
        [[5, 2], [9], [4, 7]]
    # both limits: the first reached ends the piece
    assert [p.tolist() for p in micro_batches(rows, tokens, max_rows=1, max_tokens=100)] == \
        [[5], [2], [9], [4], [7]]


def test_combine_stats_by_hand():
    parts = [({"loss": 0.25, "frac": 0.5, "low": 0.8, "high": 1.1}, 2.0),
             ({"loss": 0.5, "frac": 0.0, "low": 0.9, "high": 1.3}, 6.0),
             ({"loss": 0.0, "frac": 0.0, "low": 1.0, "high": 1.0}, 0.0)]  # no valid tokens
    combined = combine_stats(parts, {"loss": "sum", "low": "min", "high": "max"})
    # frac: (0.5 * 2 + 0 * 6) / 8 = 0.125; the empty part's 1.0 is no min or max
    assert combined == {"loss": 0.75, "frac": 0.125, "low": 0.8, "high": 1.3}
    empty = [({"frac": 0.0, "low": 1.0}, 0.0)] * 2
    assert combine_stats(empty, {"low": "min"}) == {"frac": 0.0, "low": 1.0}


def _metrics(run_dir):
    lines = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    timing = ("time/", "tokens_per_s", "episode/env_seconds")
    return [{k: v for k, v in m.items() if not k.startswith(timing)} for m in lines]


def test_training_in_micro_batches_ends_at_the_same_weights(tmp_path, monkeypatch):
    import os
    from pathlib import Path

    from safetensors.torch import load_file

    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent),
                                                      os.environ.get("PYTHONPATH", "")]))
    common = ("steps=2", "sft.steps=0", "sampling.group_size=4", "algorithm.minibatches=2",
              *plugin_reward("train_helpers:LengthVerifier"))
    train(tiny_config(*common), tmp_path / "one")
    train(tiny_config(*common, "algorithm.micro_batch_rows=3"), tmp_path / "micro")
    one, micro = _metrics(tmp_path / "one"), _metrics(tmp_path / "micro")
    paths = [pop_seams(logged) for logged in (one, micro)]  # names, not numbers
    assert paths[0] == paths[1]  # the same forward ran, split or not
    assert micro == [pytest.approx(m, rel=1e-5, abs=1e-6) for m in one]
    assert all(m["rows_trained"] > 3 for m in one)  # so the rows really were split
    final = "checkpoints/step-000002/model.safetensors"
    a, b = load_file(tmp_path / "one" / final), load_file(tmp_path / "micro" / final)
    for name, value in a.items():
        torch.testing.assert_close(b[name], value, rtol=1e-5, atol=1e-6)
