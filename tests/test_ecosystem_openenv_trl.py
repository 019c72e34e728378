"""TRL's GRPOTrainer (the installed 1.16) training on rlvr's tasks served as an OpenEnv
environment, through TRL's own environment path (`environment_factory` with
rlvr.environments.ecosystem.openenv_trl, last test) and its `rollout_func` path: each rollout is one OpenEnv session
on rlvr's server (reset to the row's task, the tiny model's completion sent as the step),
and the reward TRL logs for each completion is the server's, which the test checks
against the verifier run here on the text TRL logged."""

from __future__ import annotations

import json

import pytest
import torch

pytest.importorskip("openenv.core", reason="openenv-core is not installed "
                    "(pip install 'rlvr[openenv]')")
trl = pytest.importorskip("trl", reason="TRL is not installed (pip install 'rlvr[test]')")

from openenv_helpers import Server  # noqa: E402
from trl_helpers import CharCoverage  # noqa: E402

from rlvr.environments.ecosystem.openenv_client import make_client  # noqa: E402

VERIFIER = "trl_helpers:CharCoverage"
REFERENCE = "aeiou0123456789"
CHAT_TEMPLATE = ("{% for m in messages %}{{ m['role'][0] | upper }}:{{ m['content'] }}\n"
                 "{% endfor %}{% if add_generation_prompt %}A:{% endif %}")


class Rollouts:
    """TRL's rollout_func: one OpenEnv session per completion, graded by the server."""

    def __init__(self, url: str, ids_by_prompt: dict[str, str]) -> None:
        self.url, self.ids_by_prompt = url, ids_by_prompt
        self.served_prompts: list[str] = []

    def __call__(self, prompts, trainer):
        tokenizer, model = trainer.processing_class, trainer.model
        out = {"prompt_ids": [], "completion_ids": [], "logprobs": [], "env_reward": []}
        for prompt in prompts:
            client = make_client(self.url, "", 30.0)
            try:
                first = client.reset(task_id=self.ids_by_prompt[prompt[-1]["content"]])
                self.served_prompts.append(first.observation["prompt"])
                chat = [{"role": "user", "content": first.observation["prompt"]}]
                ids = tokenizer.apply_chat_template(chat, add_generation_prompt=True,
                                                    tokenize=True, return_dict=False)
                completion, logprobs = _sample(model, ids, tokenizer)
                text = tokenizer.decode(completion, skip_special_tokens=True)
                reward = client.step({"message": text}).reward
            finally:
                client.close()
            out["prompt_ids"].append(list(ids))
            out["completion_ids"].append(completion)
            out["logprobs"].append(logprobs)
            out["env_reward"].append(float(reward))
        return out


def _sample(model, ids, tokenizer, max_new_tokens: int = 10):
    with torch.no_grad():
        generated = model.generate(torch.tensor([ids]), do_sample=True,
                                   max_new_tokens=max_new_tokens, output_scores=True,
                                   return_dict_in_generate=True,
                                   pad_token_id=tokenizer.pad_token_id)
        scores = model.compute_transition_scores(generated.sequences, generated.scores,
                                                 normalize_logits=True)
    completion = generated.sequences[0, len(ids):].tolist()  # [T]
    return completion, scores[0, :len(completion)].tolist()


def env_reward(prompts, completions, env_reward, **kwargs):
    return env_reward


RECORDS = [{"prompt": f"say {i}", "reference": REFERENCE, "verifier": VERIFIER,
            "id": f"task-{i}"} for i in range(2)]


def _tiny_model(tmp_path, chat_template: str):
    """A one-layer model in tmp_path/model; its tokenizer with `chat_template`."""
    from transformers import AutoTokenizer

    from rlvr.training.tiny import TinyModelSpec, build_tiny

    build_tiny(tmp_path / "model", TinyModelSpec(hidden_size=32, intermediate_size=64,
                                                 num_layers=1, num_heads=2, max_positions=64))
    tokenizer = AutoTokenizer.from_pretrained(tmp_path / "model")
    tokenizer.chat_template = chat_template
    return tokenizer


def _serve_records(tmp_path) -> Server:
    """rlvr's OpenEnv server on RECORDS, graded by the plugin verifier."""
    data = tmp_path / "tasks.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in RECORDS))
    return Server("-m", "rlvr.environments.ecosystem.openenv_http", "--data", str(data),
                  "--id-field", "id", "--plugin", VERIFIER, "--port", "0")


def _grpo_config(tmp_path):
    from trl import GRPOConfig

    return GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=8,
                      num_generations=4, max_completion_length=10, beta=0.0, max_steps=2,
                      logging_steps=1, report_to=[], save_strategy="no", use_cpu=True,
                      bf16=False, seed=0, learning_rate=1e-2, dataloader_num_workers=0)



@pytest.mark.slow  # ~30 s: TRL's import, a server, two GRPO steps
def test_trl_trains_on_rlvr_tasks_served_over_openenv(tmp_path):
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    tokenizer = _tiny_model(tmp_path, CHAT_TEMPLATE)
    server = _serve_records(tmp_path)
    logged = []
    try:
        rollouts = Rollouts(server.url, {r["prompt"]: r["id"] for r in RECORDS})
        config = _grpo_config(tmp_path)

        class Log(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                logs = trainer._logs
                logged.append((list(logs["completion"]), list(logs["rewards"]["env_reward"])))

        dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": r["prompt"]}]}
                                     for r in RECORDS])
        trainer = GRPOTrainer(model=str(tmp_path / "model"), reward_funcs=[env_reward],
                              args=config, train_dataset=dataset, processing_class=tokenizer,
                              callbacks=[Log()], rollout_func=rollouts)
        trainer.train()
    finally:
        server.stop()
    assert len(logged) == 2
    completions = [c for step, _ in logged for c in step]
    rewards = [r for _, step in logged for r in step]
    assert len(completions) == len(rewards) == 16
    assert sorted(set(rollouts.served_prompts)) == ["say 0", "say 1"]  # the server's tasks
    texts = [c[0]["content"] if isinstance(c, list) else c for c in completions]
    expected = torch.tensor([CharCoverage().verify(t, REFERENCE).score for t in texts]).tolist()
    assert rewards == expected  # the server's verdicts, as TRL logged them (float32)
    assert len(set(expected)) > 1  # scores that tell the completions apart


@pytest.mark.slow  # ~30 s: a server, two GRPO steps through TRL's environment path
def test_trl_environment_factory_trains_on_rlvr_tasks(tmp_path):
    """TRL's own environment path: one TrlTaskEnvironment per rollout, reset by TRL with
    the row (its task_id), its submit_answer exposed as a tool; rlvr_reward grades each
    completion on the server. The tiny model calls no tool, so every reward is its final
    text's grade, which the test computes again with the verifier."""
    from functools import partial

    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer
    from trl.chat_template_utils import qwen2_5_chat_template

    from rlvr.environments.ecosystem.openenv_trl import TrlTaskEnvironment, rlvr_reward
    # a template TRL can render tools into and parse tool calls from (its own Qwen2.5 copy)
    tokenizer = _tiny_model(tmp_path, qwen2_5_chat_template)
    server = _serve_records(tmp_path)
    logged, reset_ids = [], []

    class Recorded(TrlTaskEnvironment):
        def reset(self, task_id=None, **row):
            reset_ids.append(task_id)
            return super().reset(task_id=task_id, **row)

    try:
        config = _grpo_config(tmp_path)

        class Log(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                logs = trainer._logs
                logged.append((list(logs["completion"]), list(logs["rewards"]["rlvr_reward"])))

        dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": r["prompt"]}],
                                      "task_id": r["id"]} for r in RECORDS])
        trainer = GRPOTrainer(model=str(tmp_path / "model"), reward_funcs=[rlvr_reward],
                              args=config, train_dataset=dataset, processing_class=tokenizer,
                              callbacks=[Log()],
                              environment_factory=partial(Recorded, server.url))
        assert "submit_answer" in [t.__name__ for t in trainer.tools]  # exposed as a tool
        trainer.train()
        # the tool path: a submitted answer is graded once, and is the rollout's reward
        env = TrlTaskEnvironment(server.url)
        env.reset(task_id="task-0", prompt="ignored")
        assert env.submit_answer(REFERENCE) == "correct"
        assert env.submit_answer("x").startswith("An answer was already submitted")
        assert rlvr_reward(["anything else"], [env]) == [1.0]
        env.reset(task_id="task-1")
        assert env.submit_answer("zzz") == "not correct"
        assert rlvr_reward([[{"role": "assistant", "content": REFERENCE}]], [env]) == [0.0]
    finally:
        server.stop()
    assert len(logged) == 2 and sorted(set(reset_ids)) == ["task-0", "task-1"]
    assert len(reset_ids) == 16  # one reset per rollout: 2 steps x 8
    completions = [c for step, _ in logged for c in step]
    rewards = [r for _, step in logged for r in step]
    texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
    expected = torch.tensor([CharCoverage().verify(t, REFERENCE).score for t in texts]).tolist()
    assert rewards == expected and len(set(expected)) > 1
