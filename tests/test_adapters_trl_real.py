"""rlvr's TRL reward functions inside the installed `trl.GRPOTrainer` (2 steps on a
tiny random Llama, CPU): the rewards TRL logs for each completion are rlvr's verdict
scores for that completion, for the sync function and the async one alike, and a
completion TRL splits into reasoning_content and content is graded whole."""

from __future__ import annotations

import math

import pytest
import torch

from rlvr.adapters.trl import AsyncRewardFunction, reward_func
from rlvr.verifiers.pool import Case, VerifierPool

trl = pytest.importorskip("trl", reason="TRL is not installed (pip install 'rlvr[test]')")
if not getattr(pytest.importorskip("trl.chat_template_utils"), "_SUPPORTS_RESPONSE_TEMPLATE",
               False):
    pytest.skip("this TRL/transformers pair cannot split reasoning_content off (needs "
                "transformers >= 5.13)", allow_module_level=True)

VERIFIER = "trl_helpers:CharCoverage"
REFERENCE = "aeiou0123456789"
# A chat template that opens a <think> block for the model, and the response template
# TRL (transformers >= 5.13) parses completions with: the model's text up to "|" is the
# reasoning_content, the rest the content. The random model writes "|" now and then.
CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'][0] | upper }}:{{ m['content'] }}\n"
                 "{% endfor %}{% if add_generation_prompt %}A:<think>{% endif %}")
RESPONSE_TEMPLATE = {"defaults": {"role": "assistant"}, "start_anchor": "A:",
                     "fields": {"reasoning_content": {"open": "<think>", "close": "|",
                                                      "content": "text"},
                                "content": {"content": "text"}}}


class BatchLog:
    """Each step's completions and per-function rewards, as TRL logged them."""

    def __init__(self) -> None:
        self.trainer = None
        self.steps: list[dict] = []

    def on_step_end(self, args, state, control, **kwargs):  # noqa: ANN001
        logs = self.trainer._logs  # filled by this step's generation; logged after it
        self.steps.append({"completions": list(logs["completion"]),
                           "rewards": {k: list(v) for k, v in logs["rewards"].items()},
                           "extra": {k: list(v) for k, v in logs["extra"].items()}})


def _tiny_chat_model(directory):
    from transformers import AutoTokenizer

    from rlvr.training.tiny import TinyModelSpec, build_tiny

    build_tiny(directory, TinyModelSpec(hidden_size=32, intermediate_size=64, num_layers=1,
                                        num_heads=2, max_positions=64))
    tokenizer = AutoTokenizer.from_pretrained(directory)
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.response_template = RESPONSE_TEMPLATE
    return tokenizer


def _train(tmp_path, reward_funcs):
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    tokenizer = _tiny_chat_model(tmp_path / "model")
    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": f"say {i}"}],
                                  "reference": REFERENCE} for i in range(2)])
    config = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=8,
                        num_generations=4, max_completion_length=12, beta=0.0, max_steps=2,
                        logging_steps=1, report_to=[], save_strategy="no", use_cpu=True,
                        bf16=False, seed=0, gradient_checkpointing=False,
                        learning_rate=1e-2, dataloader_num_workers=0)
    log = BatchLog()
    callback = type("Log", (TrainerCallback,), {"on_step_end": log.on_step_end})()
    trainer = GRPOTrainer(model=str(tmp_path / "model"), reward_funcs=reward_funcs,
                          args=config, train_dataset=dataset, processing_class=tokenizer,
                          callbacks=[callback])
    log.trainer = trainer
    trainer.train()
    return trainer, log


def _whole_text(completion: list[dict]) -> str:
    """What the model wrote: the reasoning TRL split off, back in its <think> block."""
    (message,) = completion
    reasoning = message.get("reasoning_content") or ""
    return (f"<think>{reasoning}</think>" if reasoning else "") + (message.get("content") or "")


@pytest.mark.slow  # ~25 s on 2 busy cores, most of it importing TRL
def test_real_grpo_trainer_logs_rlvrs_verdict_scores(tmp_path):
    with VerifierPool(workers=1, plugins=[VERIFIER]) as own_pool:
        sync = reward_func(VERIFIER, name="rlvr_sync", pool=own_pool, plugins=[VERIFIER])
        async_ = reward_func(VERIFIER, name="rlvr_async", asynchronous=True,
                             plugins=[VERIFIER])  # shared pool
        assert isinstance(async_, AsyncRewardFunction) and not isinstance(sync, AsyncRewardFunction)
        trainer, log = _train(tmp_path, [sync, async_])
    assert len(log.steps) == 2
    completions = [c for step in log.steps for c in step["completions"]]
    assert len(completions) == 16
    # TRL parsed the responses: every completion has reasoning, some content after "|"
    assert all(c[0].get("reasoning_content") for c in completions)
    assert any(c[0].get("content") for c in completions)

    texts = [_whole_text(c) for c in completions]
    with VerifierPool(workers=1, plugins=[VERIFIER]) as pool:  # rlvr's verdicts, graded apart from TRL
        verdicts = pool.verify([Case(VERIFIER, text, REFERENCE) for text in texts])
    assert [v.details["text"] for v in verdicts] == texts
    expected = torch.tensor([v.score for v in verdicts]).tolist()  # TRL keeps float32
    assert len(set(expected)) > 1  # scores that tell the completions apart
    for name in ("rlvr_sync", "rlvr_async"):
        logged = [r for step in log.steps for r in step["rewards"][name]]
        assert logged == expected, name
        assert all(step["extra"][f"{name}_reason"] == ["coverage"] * 8 for step in log.steps)
    rows = [row for row in trainer.state.log_history if "rewards/rlvr_sync/mean" in row]
    assert len(rows) == 2
    for row, start in zip(rows, (0, 8)):
        mean = sum(expected[start:start + 8]) / 8
        assert math.isclose(row["rewards/rlvr_sync/mean"], mean, rel_tol=1e-6)
        assert math.isclose(row["rewards/rlvr_async/mean"], mean, rel_tol=1e-6)
        passed = sum(v.passed for v in verdicts[start:start + 8]) / 8
        assert row["rlvr_sync/passed"] == row["rlvr_async/passed"] == passed
