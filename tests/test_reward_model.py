"""Reward-model pieces without a model: the Bradley-Terry loss by hand, pairwise
accuracy, the normalisations, preference-pair loading errors, the held-out split, the
verifier's option checks and the trainer's in-process routing."""

from __future__ import annotations

import json
import math

import pytest
import torch

from rlvr.algorithms import bradley_terry_loss, pairwise_accuracy
from rlvr.data.loading import DataError
from rlvr.training.preference_data import PreferencePair, load_pairs, split_held_out
from rlvr.training.rewards import LocalScoring
from rlvr.verifiers.base import Verdict
from rlvr.verifiers.pool import Case
from rlvr.verifiers.registry import check_options, spec_for
from rlvr.verifiers.reward_model.normalise import RewardStats, normalise


def test_bradley_terry_loss_by_hand():
    chosen = torch.tensor([2.0, 0.0], requires_grad=True)
    rejected = torch.tensor([0.0, 1.0])
    loss = bradley_terry_loss(chosen, rejected)
    # margins 2 and -1: (log(1 + e^-2) + log(1 + e^1)) / 2 = (0.126928 + 1.313262) / 2
    assert loss.item() == pytest.approx(0.720095, abs=1e-6)
    loss.backward()
    # d/dc -log sigmoid(m) / N = -(1 - sigmoid(m)) / 2: m=2 -> -0.119203/2, m=-1 -> -0.731059/2
    assert chosen.grad.tolist() == pytest.approx([-0.0596015, -0.3655293], abs=1e-6)


def test_bradley_terry_loss_stays_finite_and_checks_shapes():
    # a margin of -200: sigmoid rounds to 0, logsigmoid does not
    assert float(bradley_terry_loss(torch.tensor([0.0]), torch.tensor([200.0]))) == \
        pytest.approx(200.0)
    with pytest.raises(ValueError, match=r"\[N\]"):
        bradley_terry_loss(torch.zeros(2), torch.zeros(3))


def test_pairwise_accuracy_counts_ties_half():
    assert pairwise_accuracy(torch.tensor([1.0, 2.0, 3.0]),
                             torch.tensor([0.0, 2.0, 5.0])) == pytest.approx(0.5)
    assert pairwise_accuracy(torch.ones(4), torch.ones(4)) == 0.5


def test_normalisations():
    assert normalise(0.0, "sigmoid")[0] == 0.5
    assert normalise(2.0, "sigmoid")[0] == pytest.approx(1 / (1 + math.exp(-2)))
    assert normalise(-800.0, "sigmoid")[0] == 0.0  # no overflow
    stats = RewardStats(mean=1.0, std=2.0)
    score, details = normalise(3.0, "standard", stats)  # z = 1
    assert details["normalised"] == 1.0 and score == pytest.approx(0.841345, abs=1e-6)
    assert normalise(1.0, "standard", stats)[0] == 0.5
    assert normalise(1.7, "none") == (1.0, {"normalised": 1.7, "clipped": True})
    assert normalise(0.25, "none") == (0.25, {"normalised": 0.25, "clipped": False})
    with pytest.raises(ValueError, match="statistics"):
        normalise(0.0, "standard")
    with pytest.raises(ValueError, match="normalization"):
        normalise(0.0, "zscore")


def _write(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


GOOD = {"prompt": "1+1=", "chosen": "2", "rejected": "3"}


@pytest.mark.parametrize("bad, message", [
    ({"prompt": "1+1=", "chosen": "2"}, "field 'rejected' is missing"),
    ({"prompt": "1+1=", "chosen": "2", "rejected": 3}, "field 'rejected' must be text"),
    ({"prompt": " ", "chosen": "2", "rejected": "3"}, "field 'prompt' is empty"),
    ({"prompt": "1+1=", "chosen": "2", "rejected": "2"}, "identical"),
    (["1+1=", "2", "3"], "must be an object"),
    ("{not json", "malformed JSON"),
])
def test_bad_pair_rows_name_file_and_line(tmp_path, bad, message):
    path = _write(tmp_path / "pairs.jsonl", [GOOD, GOOD, bad])
    with pytest.raises(DataError, match=message) as info:
        load_pairs(path)
    assert f"{path}:3" in str(info.value)


def test_missing_and_empty_files(tmp_path):
    with pytest.raises(DataError, match="no such file"):
        load_pairs(tmp_path / "absent.jsonl")
    with pytest.raises(DataError, match="no preference pairs"):
        load_pairs(_write(tmp_path / "empty.jsonl", []))


def test_held_out_split_keeps_prompts_apart():
    pairs = [PreferencePair(f"p{i % 10}", "a", "b") for i in range(100)]
    train, held = split_held_out(pairs, 0.2, seed=0)
    assert len(train) + len(held) == 100 and 20 <= len(held) <= 30
    assert not {p.prompt for p in train} & {p.prompt for p in held}
    with pytest.raises(DataError, match="two distinct prompts"):
        split_held_out(pairs[:1], 0.2, seed=0)


def test_verifier_options_are_checked_before_loading(tmp_path):
    assert spec_for("reward_model").in_process
    with pytest.raises(ValueError, match="'model'.*required"):
        check_options("reward_model", {})
    with pytest.raises(ValueError, match="not a model dir"):
        check_options("reward_model", {"model": str(tmp_path)})
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="normalization"):
        check_options("reward_model", {"model": str(tmp_path), "normalization": "z"})
    with pytest.raises(ValueError, match="statistics"):  # no rlvr_reward_model.json here
        check_options("reward_model", {"model": str(tmp_path), "normalization": "standard"})
    with pytest.raises(ValueError, match="options:"):
        check_options("reward_model", {"model": str(tmp_path), "temperature": 1})
    check_options("reward_model", {"model": str(tmp_path)})


class _Pool:
    """Answers every case with its completion's length; records what it was sent."""

    def __init__(self):
        self.sent: list[Case] = []

    def verify(self, cases):
        self.sent.extend(cases)
        return [Verdict(0.0, False, "pool", {"n": len(c.completion)}) for c in cases]


class _Scorer:
    name = "fake_rm"
    seen: list = []

    def __init__(self, **options):
        self.options = options

    def verify_batch(self, completions, prompts):
        _Scorer.seen.append((list(completions), list(prompts), self.options))
        return [Verdict(1.0, True, "scored") for _ in completions]


def test_in_process_cases_skip_the_pool_in_one_batch(monkeypatch):
    from rlvr.verifiers import registry

    monkeypatch.setitem(registry._REGISTERED, "fake_rm",
                        registry.VerifierSpec(_Scorer, in_process=True))
    cases = [Case("exact", "1", "1"), Case("fake_rm", "a", None, prompt="p1"),
             Case("exact", "22", "1"), Case("fake_rm", "b", None, prompt="p2")]
    pool = _Pool()
    verdicts = LocalScoring(pool, "cpu").verify(cases)
    assert [v.reason for v in verdicts] == ["pool", "scored", "pool", "scored"]
    assert [c.completion for c in pool.sent] == ["1", "22"]
    assert _Scorer.seen[-1] == (["a", "b"], ["p1", "p2"], {"device": "cpu"})
