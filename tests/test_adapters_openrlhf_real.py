"""rlvr's OpenRLHF reward_func driven through the installed OpenRLHF's own code:
`SingleTurnAgentExecutor(remote_rm_url="<file>.py")` loads the file's `reward_func` the
way `--remote_rm_url` does, and its `_fetch_rewards_via_func` calls it per item, in
threads, with queries decoded as OpenRLHF decodes them (special tokens kept).
(tests/test_adapters_throughput.py covers the same contract without OpenRLHF.)

Skipped, with the reason printed, where OpenRLHF is not importable: `pip install
openrlhf` (0.11.2) fails on a CPU-only machine, building its pinned flash-attn from
source (its build needs torch and CUDA).
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip(
    "openrlhf", reason="OpenRLHF is not installed: `pip install openrlhf` (0.11.2) cannot "
                       "install on this CPU-only machine (its pinned flash-attn==2.8.3 must "
                       "be built from source with torch and CUDA); install it on a GPU "
                       "machine to run the real-OpenRLHF adapter test")

from rlvr.adapters import common
from rlvr.training.tiny import char_tokenizer
from rlvr.verifiers import get_verifier
from rlvr.verifiers.base import run_verifier

ITEMS = [  # (prompt, response, label): right, wrong, and the question's expression boxed
    ("What is 6*7?", "6*7 is \\boxed{42}", "42"),
    ("What is 6*7?", "\\boxed{41}", "42"),
    ("Compute $6 \\times 7$.", "\\boxed{6 \\times 7}", "42"),
]


@pytest.fixture(autouse=True)
def shared_workers():
    common.configure(workers=2)
    yield
    common.SHARED.close()
    common.configure(None)


def test_openrlhf_loads_and_calls_rlvr_reward_func(tmp_path):
    from openrlhf.utils.agent import SingleTurnAgentExecutor

    reward_file = tmp_path / "reward_func.py"
    reward_file.write_text("from rlvr.adapters.openrlhf import make_reward_func\n"
                           "reward_func = make_reward_func('math')\n")
    executor = SingleTurnAgentExecutor(remote_rm_url=str(reward_file))
    assert executor.reward_func is not None

    tokenizer = char_tokenizer()
    queries, prompts, labels = [], [], []
    for prompt, response, label in ITEMS:
        ids = tokenizer.encode(prompt + response, add_special_tokens=False)
        ids = [tokenizer.bos_token_id] + ids + [tokenizer.eos_token_id]
        queries.append(tokenizer.decode(ids, skip_special_tokens=False))  # as OpenRLHF does
        prompts.append(prompt)
        labels.append(label)
    assert queries[0].startswith(tokenizer.bos_token) and queries[0].endswith(tokenizer.eos_token)

    results = asyncio.run(executor._fetch_rewards_via_func(queries, prompts, labels))

    math = get_verifier("math")
    expected = [run_verifier(math, response, label, prompt=prompt).score
                for prompt, response, label in ITEMS]
    assert expected == [1.0, 0.0, 0.0]
    assert [r["rewards"].tolist() for r in results] == [[s] for s in expected]
    assert [r["extra_logs"]["passed"].tolist() for r in results] == [[s] for s in expected]
