"""The adapters built for throughput: no global lock (concurrent calls grade in
parallel), verl's async compute_score with acc/pred, TRL's async reward function as
the installed TRL sees it, reasoning_content, log_extra/log_metric, OpenRLHF's
reward_func(queries, prompts, labels)."""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict

import pytest

from rlvr.adapters import common
from rlvr.adapters.openrlhf import make_reward_func
from rlvr.adapters.trl import AsyncRewardFunction, reward_func
from rlvr.adapters.verl import compute_score, compute_score_async

SLOW = "serve_helpers:SlowVerifier"  # sleeps its reference's seconds, then passes


@pytest.fixture(scope="module", autouse=True)
def four_workers():
    common.configure(workers=4, plugins=[SLOW])
    common.SHARED.verify([common.Case("exact", "1", "1")] * 4)  # start them, untimed
    yield
    common.SHARED.close()
    common.configure(None)


def test_verl_async_items_grade_in_parallel_with_acc_and_pred():
    async def four():
        return await asyncio.gather(*(compute_score_async("slow", "", 1.5, {"verifier": SLOW}) for _ in range(4)))

    start = time.monotonic()
    results = asyncio.run(four())
    elapsed = time.monotonic() - start
    assert elapsed < 4.0, elapsed  # one at a time would take 6 s
    assert all(r["score"] == 1.0 and r["acc"] == 1.0 for r in results)
    right = compute_score("openai/gsm8k", "so #### 42", "42")
    wrong = compute_score("openai/gsm8k", "so #### 41", "42")
    assert (right["acc"], right["pred"]) == (1.0, "42")
    assert (wrong["acc"], wrong["pred"]) == (0.0, "41")
    assert set(right) == set(wrong)  # verl stacks every item's keys


def test_trl_sees_the_async_function_as_async_and_it_logs():
    from trl.trainer.utils import is_async_callable  # the installed TRL's own check

    func = reward_func("exact", asynchronous=True, name="ex")
    assert isinstance(func, AsyncRewardFunction) and is_async_callable(func)
    assert not is_async_callable(reward_func("exact"))
    extra, metrics = defaultdict(list), defaultdict(list)
    rewards = asyncio.run(func(prompts=["p"] * 3, completions=["#### 1", "#### 2", "x"],
                               reference=["1", "1", None], trainer_state=None,
                               log_extra=lambda k, v: extra[k].extend(v),
                               log_metric=lambda k, v: metrics[k].append(v)))
    assert rewards == [1.0, 0.0, None]
    assert extra["ex_reason"] == ["correct", "wrong_answer", ""]
    assert metrics["ex/passed"] == [0.5] and metrics["ex/timeout"] == [0.0]


def test_trl_reasoning_content_is_graded_as_the_model_wrote_it():
    func = reward_func("format")
    completion = [{"role": "assistant", "reasoning_content": "2 and 2 make 4",
                   "content": "<answer>4</answer>"}]
    assert func(prompts=["p"], completions=[completion], reference=[""]) == [1.0]
    bare = [{"role": "assistant", "content": "<answer>4</answer>"}]
    assert func(prompts=["p"], completions=[bare], reference=[""]) == [0.0]


def test_openrlhf_reward_func_reads_the_response_out_of_the_query():
    func = make_reward_func("math")
    prompts = ["<|user|>What is 6*7?<|assistant|>", "<|user|>Half of 1?<|assistant|>"]
    responses = ["6*7 is \\boxed{42}", "\\boxed{0.4}"]
    queries = ["<s>" + p + r for p, r in zip(prompts, responses)]  # decoding adds a token
    out = func(queries, prompts, ["42", "\\frac12"])
    assert out["rewards"].tolist() == [1.0, 0.0] and out["extra_logs"]["passed"].tolist() == [1.0, 0.0]
    mixed = func([prompts[0] + "#### 7"], [prompts[0]],
                 ['{"verifier": "exact", "reference": "7"}'])
    assert mixed["scores"].tolist() == [1.0]
    with pytest.raises(ValueError, match="item 0"):
        func(["something else"], [prompts[0]], ["42"])
    with pytest.raises(ValueError, match="item 0: invalid label"):
        func([prompts[0] + "x"], [prompts[0]], ['{"verifier": "exact", "reference": {"a": 1}}'])
