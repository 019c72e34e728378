"""The TRL and verl adapters, called exactly the way each host calls them.

Neither TRL nor verl is installed here; the two `host_*` functions below reproduce
the hosts' calling code: TRL GRPOTrainer._calculate_rewards (every dataset column but
prompt/completion/completion_ids passed as a keyword list, plus trainer_state; None
rewards become NaN; functions named by __name__) and verl NaiveRewardManager /
BatchRewardManager (keyword call per item with ground_truth from
non_tensor_batch["reward_model"], extra_info mutated with num_turns, dict results
split into score + reward_extra_info).
"""

from __future__ import annotations

import json
import math
from collections import defaultdict

import numpy as np
import pytest

from rlvr.adapters.trl import reward_func
from rlvr.adapters.verl import compute_score, compute_score_batch
from rlvr.verifiers import VerifierPool

IFEVAL_REF = {"prompt": "p", "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}


def host_trl(reward_funcs, inputs, completions):
    """TRL: rewards per function and completion, None -> NaN, keyed by __name__."""
    prompts = [row["prompt"] for row in inputs]
    keys = [key for key in inputs[0] if key not in ("prompt", "completion", "completion_ids")]
    reward_kwargs = {key: [row[key] for row in inputs] for key in keys}
    reward_kwargs["trainer_state"] = object()  # TrainerState; reward functions ignore it
    completion_ids = [[1, 2, 3] for _ in completions]
    table = {}
    for func in reward_funcs:
        output = func(prompts=prompts, completions=completions, completion_ids=completion_ids,
                      **reward_kwargs)
        table[func.__name__] = [r if r is not None else math.nan for r in output]
    return table


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(workers=2) as p:
        yield p


def test_trl_text_completions_mixed_tasks(pool):
    inputs = [{"prompt": "Say 7", "reference": "7", "verifier": "exact"},
              {"prompt": "No commas", "reference": IFEVAL_REF, "verifier": "ifeval"},
              {"prompt": "Say 8", "reference": "8", "verifier": "exact"}]
    funcs = [reward_func("exact", pool=pool), reward_func("ifeval", pool=pool, name="instr")]
    table = host_trl(funcs, inputs, ["7", "a, b", "9"])
    assert table["rlvr_exact"][0] == 1.0 and table["rlvr_exact"][2] == 0.0
    assert math.isnan(table["rlvr_exact"][1])  # another verifier's row: not applicable
    assert math.isnan(table["instr"][0]) and table["instr"][1] == 0.0


def test_trl_conversational_completions_and_verifier_column(pool):
    inputs = [{"prompt": [{"role": "user", "content": "q"}], "reference": "42",
               "verifier": "exact"},
              {"prompt": [{"role": "user", "content": "q"}], "reference": json.dumps(IFEVAL_REF),
               "verifier": "ifeval"}]  # a structured reference stored as JSON text
    completions = [[{"role": "assistant", "content": "42"}],
                   [{"role": "assistant", "content": [{"type": "text", "text": "no commas"}]}]]
    func = reward_func(None, pool=pool)  # each row's "verifier" column picks
    assert host_trl([func], inputs, completions)["rlvr_verifier"] == [1.0, 1.0]
    assert func.last_verdicts[1].details["instructions"][0]["followed"] is True


def test_trl_composite_and_options(pool):
    components = [{"verifier": "format", "weight": 0.5, "gate": True},
                  {"verifier": "exact", "weight": 0.5, "extract_tag": "answer"}]
    func = reward_func("composite", pool=pool, options={"components": components}, name="r1")
    inputs = [{"prompt": "q", "reference": "3"}] * 3
    completions = ["<think>1+2</think><answer>3</answer>", "<answer>3</answer>",
                   "<think>1+2</think><answer>4</answer>"]
    assert host_trl([func], inputs, completions)["r1"] == [1.0, 0.0, 0.5]
    assert func.last_verdicts[1].details["gated_by"] == ["format"]


def test_trl_invalid_reference_raises_naming_the_row(pool):
    inputs = [{"prompt": "q", "reference": IFEVAL_REF},
              {"prompt": "q", "reference": {"instruction_id_list": ["bad:id"], "kwargs": [{}]}}]
    with pytest.raises(ValueError, match="row 1: invalid reference.*bad:id"):
        host_trl([reward_func("ifeval", pool=pool)], inputs, ["x", "y"])
    lenient = reward_func("ifeval", pool=pool, on_invalid="none", name="lenient")
    assert host_trl([lenient], inputs, ["x", "y"])["lenient"][0] == 1.0
    with pytest.raises(ValueError, match="no 'answer' column"):
        host_trl([reward_func("exact", pool=pool, reference_column="answer")], inputs, ["x", "y"])
    with pytest.raises(KeyError):
        reward_func("no_such_verifier")
    with pytest.raises(ValueError, match="bad options"):
        reward_func("ifeval", options={"lose": True})  # typo caught in the trainer
    with pytest.raises(ValueError, match="weight"):
        reward_func("composite", options={"components": [{"verifier": "exact", "weight": -1}]})


def host_verl_naive(compute, non_tensor_batch, responses, reward_kwargs=None):
    """verl NaiveRewardManager: per-item keyword call; returns scores and extra info."""
    scores, extra = [], defaultdict(list)
    for i, response in enumerate(responses):
        ground_truth = non_tensor_batch["reward_model"][i]["ground_truth"]
        data_source = non_tensor_batch["data_source"][i]
        extra_info = non_tensor_batch["extra_info"][i]
        extra_info["num_turns"] = None
        result = compute(data_source=data_source, solution_str=response,
                         ground_truth=ground_truth, extra_info=extra_info,
                         **(reward_kwargs or {}))
        if isinstance(result, dict):
            scores.append(result["score"])
            for key, value in result.items():
                extra[key].append(value)
        else:
            scores.append(result)
    assert all(len(v) == len(responses) for v in extra.values())  # consistent keys
    return scores, dict(extra)


def _parquet_like_batch():
    # what verl reads from parquet: object arrays, nested lists as numpy arrays, kwargs
    # structs carrying every kwarg name (null where unused)
    ifeval_truth = {"instruction_id_list": np.array(["punctuation:no_comma",
                                                     "startend:end_checker"], dtype=object),
                    "kwargs": np.array([{"end_phrase": None}, {"end_phrase": "bye"}], dtype=object)}
    return {
        "data_source": np.array(["openai/gsm8k", "google/IFEval", "exact", "custom"], dtype=object),
        "reward_model": np.array([{"ground_truth": "12", "style": "rule"},
                                  {"ground_truth": ifeval_truth, "style": "rule"},
                                  {"ground_truth": "5", "style": "rule"},
                                  {"ground_truth": "x", "style": "rule"}], dtype=object),
        "extra_info": np.array([{"verifier": "exact"}, {}, {}, {"verifier": "exact"}],
                               dtype=object),
    }


def test_verl_naive_reward_manager():
    batch = _parquet_like_batch()
    responses = ["#### 12", "ok then bye", "6", "x"]
    scores, extra = host_verl_naive(compute_score, batch, responses)
    # gsm8k is routed by extra_info's verifier (exact here, so no math dependency)
    assert scores == [1.0, 1.0, 0.0, 1.0]
    assert extra["passed"] == [1.0, 1.0, 0.0, 1.0]


def test_verl_reward_kwargs_pick_the_verifier_and_log_components():
    batch = {"data_source": np.array(["anything"], dtype=object),
             "reward_model": np.array([{"ground_truth": "3"}], dtype=object),
             "extra_info": np.array([{}], dtype=object)}
    components = [{"verifier": "format", "weight": 0.5, "gate": True},
                  {"verifier": "exact", "weight": 0.5, "extract_tag": "answer"}]
    scores, extra = host_verl_naive(
        compute_score, batch, ["<think>x</think><answer>4</answer>"],
        {"verifier": "composite", "options": {"components": components}, "log_components": True})
    assert scores == [0.5]
    assert extra["format_score"] == [1.0] and extra["exact_score"] == [0.0]


def test_verl_batch_reward_manager_and_errors():
    batch = _parquet_like_batch()
    results = compute_score_batch(
        data_sources=batch["data_source"], solution_strs=["12", "a, b bye", "5", "y"],
        ground_truths=[item["ground_truth"] for item in batch["reward_model"]],
        extra_infos=batch["extra_info"])
    assert [r["score"] for r in results] == [1.0, 0.5, 1.0, 0.0]
    # verl's offline evaluation passes data_sources=None
    assert compute_score_batch(data_sources=None, solution_strs=["5"], ground_truths=["5"],
                               extra_infos=[{}], verifier="exact")[0]["score"] == 1.0
    with pytest.raises(ValueError, match="no verifier for data_source 'unknown/set'"):
        compute_score(data_source="unknown/set", solution_str="1", ground_truth="1")
    with pytest.raises(ValueError, match="bad options"):
        compute_score(data_source="exact", solution_str="1", ground_truth="1",
                      options={"case_sensitiv": True})
    with pytest.raises(ValueError, match="invalid ground_truth"):
        compute_score(data_source="ifeval", solution_str="1",
                      ground_truth={"instruction_id_list": ["bad"], "kwargs": [{}]})
