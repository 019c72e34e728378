"""rlvr's verl adapter driven through the installed verl's own code (not an imitation):

1. verl's NaiveRewardManager (verl.workers.reward_manager.naive) with rlvr's
   compute_score, on a real verl.DataProto tokenized with rlvr's character tokenizer:
   the reward tensor and reward_extra_info (acc, pred) must match rlvr's own verdicts.
2. verl's reward loop (verl.experimental.reward_loop: RewardLoopWorker, which loads the
   custom reward function from its file the way a verl config names it and gathers one
   task per item; its NaiveRewardManager awaits a coroutine function) with
   compute_score_async: the same scores, and the items graded at the same time
   (timestamps written inside the verifier, not a wall-clock bound).

Skipped, with the reason printed, where verl is not importable.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

verl = pytest.importorskip(
    "verl", reason="verl is not installed; install it with `pip install verl==0.9.1 --no-deps "
                   "tensordict codetiming hydra-core omegaconf` to run the real-verl adapter tests")

import numpy as np
import torch

import rlvr.adapters.verl as rlvr_verl
from rlvr.adapters import common
from rlvr.training.tiny import char_tokenizer
from rlvr.verifiers import get_verifier
from rlvr.verifiers.base import run_verifier

WORKERS = 5

# (data_source, question, response, ground_truth): right and wrong answers, and a hack
# (the question's own expression, boxed) that the math verifier refuses.
ITEMS = [
    ("openai/gsm8k", "Tom has 5 apples and buys 7 more. How many apples?",
     "5 + 7 = 12 apples.\n#### 12", "12"),
    ("openai/gsm8k", "What is 6*7?", "I think it is\n#### 41", "42"),
    ("lighteval/MATH", "Compute $6 \\times 7$.", "\\boxed{6 \\times 7}", "42"),
    ("HuggingFaceH4/MATH-500", "What is half of one?", "Half of one is \\boxed{0.5}.",
     "\\frac{1}{2}"),
    ("math", "What is 3+4?", "3 + 4 = \\boxed{7}", "7"),
]
EXPECTED_SCORES = [1.0, 0.0, 0.0, 1.0, 1.0]  # what rlvr's math verifier must say (checked)


@pytest.fixture(scope="module", autouse=True)
def shared_workers():
    common.configure(workers=WORKERS)
    yield
    common.SHARED.close()
    common.configure(None)


@pytest.fixture(scope="module")
def tokenizer():
    return char_tokenizer()


def rlvr_verdicts():
    """rlvr's own verdicts for ITEMS, straight from the math verifier (no adapter, no verl)."""
    math = get_verifier("math")
    return [run_verifier(math, response, truth, prompt=question)
            for _, question, response, truth in ITEMS]


def build_batch(tokenizer):
    """A DataProto laid out as verl's rollout leaves it: left-padded prompts, responses
    ending in EOS then right padding, attention_mask over both, and the dataset's
    non-tensor columns (data_source, reward_model.ground_truth, extra_info with the
    question, as verl's gsm8k/MATH preprocessing writes it)."""
    from verl import DataProto

    prompts = [tokenizer.encode(q, add_special_tokens=False) for _, q, _, _ in ITEMS]
    responses = [tokenizer.encode(r, add_special_tokens=False) + [tokenizer.eos_token_id]
                 for _, _, r, _ in ITEMS]
    width_p = max(map(len, prompts))
    width_r = max(map(len, responses)) + 3  # some padding after every response
    pad = tokenizer.pad_token_id
    prompt_ids = torch.tensor([[pad] * (width_p - len(p)) + p for p in prompts])
    prompt_mask = torch.tensor([[0] * (width_p - len(p)) + [1] * len(p) for p in prompts])
    response_ids = torch.tensor([r + [pad] * (width_r - len(r)) for r in responses])
    response_mask = torch.tensor([[1] * len(r) + [0] * (width_r - len(r)) for r in responses])
    attention_mask = torch.cat([prompt_mask, response_mask], dim=1)
    data = DataProto.from_dict(
        tensors={"prompts": prompt_ids, "responses": response_ids,
                 "input_ids": torch.cat([prompt_ids, response_ids], dim=1),
                 "attention_mask": attention_mask,
                 "position_ids": (attention_mask.cumsum(dim=1) - 1).clamp(min=0)},
        non_tensors={
            "data_source": np.array([d for d, _, _, _ in ITEMS], dtype=object),
            "reward_model": np.array([{"ground_truth": t, "style": "rule"}
                                      for _, _, _, t in ITEMS], dtype=object),
            "extra_info": np.array([{"split": "test", "index": i, "question": q}
                                    for i, (_, q, _, _) in enumerate(ITEMS)], dtype=object),
        })
    # where verl puts each item's reward: the last valid response token (the EOS)
    last = [len(r) - 1 for r in responses]
    return data, last


def expected_reward_tensor(data, last, scores):
    expected = torch.zeros_like(data.batch["responses"], dtype=torch.float32)
    for i, (position, score) in enumerate(zip(last, scores)):
        expected[i, position] = score
    return expected


def test_rlvr_verdicts_are_what_the_items_mean():
    # the independent reference the verl tests compare with, pinned so they cannot
    # pass vacuously (e.g. everything 0)
    verdicts = rlvr_verdicts()
    assert [v.score for v in verdicts] == EXPECTED_SCORES
    assert verdicts[2].reason == "echoes_prompt"  # the hack is refused as such


def test_verl_naive_reward_manager_scores_with_rlvr(tokenizer):
    from verl.workers.reward_manager.naive import NaiveRewardManager

    data, last = build_batch(tokenizer)
    manager = NaiveRewardManager(tokenizer=tokenizer, num_examine=0,
                                 compute_score=rlvr_verl.compute_score)
    out = manager(data, return_dict=True)

    verdicts = rlvr_verdicts()
    scores = [v.score for v in verdicts]
    assert torch.equal(out["reward_tensor"], expected_reward_tensor(data, last, scores))
    info = out["reward_extra_info"]
    assert info["score"] == scores
    assert info["acc"] == [float(v.passed) for v in verdicts] == EXPECTED_SCORES
    assert info["pred"] == [str(v.details.get("answer") or "") for v in verdicts]
    assert info["pred"][:3] == ["12", "41", "6 \\times 7"]
    assert all(len(values) == len(ITEMS) for values in info.values())  # same keys per item
    # without return_dict verl takes the tensor alone
    assert torch.equal(manager(data), out["reward_tensor"])


def test_verl_reward_loop_awaits_compute_score_async_concurrently(tokenizer, tmp_path):
    pytest.importorskip("ray", reason="verl's reward loop imports ray; pip install ray")
    pytest.importorskip("aiohttp", reason="verl's reward loop imports aiohttp; pip install aiohttp")
    from omegaconf import OmegaConf
    from verl.experimental.reward_loop.reward_loop import RewardLoopWorker

    tokenizer_dir = tmp_path / "tokenizer"  # a local directory: verl loads it, nothing downloads
    tokenizer.save_pretrained(tokenizer_dir)
    log_dir = tmp_path / "timestamps"
    log_dir.mkdir()
    delay_s = 1.0
    # what `custom_reward_function.path=.../rlvr/adapters/verl.py name=compute_score_async
    # +reward_kwargs.verifier=... +reward_kwargs.options=...` gives a verl run; the
    # verifier is the math verifier wrapped to record when each item is graded
    reward_kwargs = {"verifier": "verl_helpers:TimedMath", "plugins": ["verl_helpers:TimedMath"],
                     "options": {"log_dir": str(log_dir), "delay_s": delay_s}}
    config = OmegaConf.create({
        "actor_rollout_ref": {"model": {"path": str(tokenizer_dir),
                                        "tokenizer_path": str(tokenizer_dir)}},
        "reward": {
            "reward_model": {"enable": False, "model_path": None},
            "reward_manager": {"name": "naive", "source": "register",
                               "module": {"path": None, "name": None}},
            "custom_reward_function": {"path": rlvr_verl.__file__, "name": "compute_score_async",
                                       "reward_kwargs": reward_kwargs},
        },
    })
    # warm every worker process (math imports) so start-up does not skew the timing
    common.SHARED.verify([common.Case("math", "\\boxed{1}", "1")] * WORKERS * 2)

    data, last = build_batch(tokenizer)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)  # verl's worker and manager take the current loop
    try:
        worker = RewardLoopWorker(config)
        assert worker.reward_manager.is_async_reward_score  # verl sees a coroutine function
        outputs = loop.run_until_complete(worker.compute_score_batch(data))
    finally:
        loop.close()
        asyncio.set_event_loop(None)

    # what verl's RewardLoopManager.compute_rm_score makes of the outputs
    scores = [output["reward_score"] for output in outputs]
    rm_scores = type(worker.reward_manager).assemble_rm_scores(data, scores)
    verdicts = rlvr_verdicts()
    assert scores == [v.score for v in verdicts] == EXPECTED_SCORES
    assert torch.equal(rm_scores, expected_reward_tensor(data, last, scores))
    assert [o["reward_extra_info"]["acc"] for o in outputs] == EXPECTED_SCORES
    assert [o["reward_extra_info"]["pred"] for o in outputs] == \
        [str(v.details.get("answer") or "") for v in verdicts]

    # every item was graded once, and all of them were in the verifier at one moment
    records = [json.loads(p.read_text()) for p in Path(log_dir).iterdir()]
    assert sorted(r["completion"] for r in records) == sorted(r for _, _, r, _ in ITEMS)
    latest_start = max(r["start"] for r in records)
    earliest_end = min(r["end"] for r in records)
    assert latest_start < earliest_end, records  # one at a time, none would overlap
    assert len({r["pid"] for r in records}) == len(ITEMS)  # spread over the workers
