"""Small configs for trainer tests: a 1-layer tiny model, a handful of problems."""

from __future__ import annotations

from rlvr.config import load_config
from rlvr.training.config import TrainConfig

TINY_OVERRIDES = [
    "model.tiny.hidden_size=32", "model.tiny.intermediate_size=64", "model.tiny.num_layers=1",
    "model.tiny.num_heads=2", "sft.steps=3", "sft.batch_size=8", "data.eval_size=6",
    "data.arithmetic.train_size=50", "sampling.prompts_per_step=4", "sampling.group_size=2",
    "sampling.max_new_tokens=6", "reward.workers=1", "optim.lr=1e-2", "optim.warmup_steps=1",
]


def tiny_config(*extra: str) -> TrainConfig:
    return load_config(TrainConfig, overrides=TINY_OVERRIDES + list(extra))


class LengthVerifier:
    """A test reward that an untrained model already earns unevenly: longer completions
    score more. (Loaded by name, "train_helpers:LengthVerifier", in worker processes.)"""

    name = "length"

    def check_reference(self, reference):
        return None

    def verify(self, completion, reference):
        from rlvr.verifiers.base import Verdict

        score = min(1.0, len(completion) / 6)
        return Verdict(score, score == 1.0, "length", {"components": {"length": score}})


class EveryAnswerPasses:
    """A held-out grader unlike the training reward: it passes everything, with its own
    reason, so the answers' files show which verifier graded them
    (tests/test_train_eval_schedule.py). It lives here, not in that test file: a plugin
    stays registered in the pytest process, so every later verifier worker of the session
    imports its module, and a test module imports torch and the trainer (~5 s a worker)."""

    name = "every_answer_passes"

    def check_reference(self, reference):
        return None

    def verify(self, completion, reference):
        from rlvr.verifiers.base import Verdict
        return Verdict.correct("graded_by_eval_verifier")


# What a run writes on every metrics line as names, not numbers: the recorded seams
# (rlvr.training.run.recorded_paths, update/pi_old) and update/path, each step's own.
# Tests that compare two runs' lines number by number compare these apart, exactly.
SEAMS = ("rollout/path", "rollout/path_reason", "rollout/path_prefix_reuse", "update/path",
         "update/path_reason", "update/pi_old")


def pop_seams(lines: list[dict]) -> list[dict]:
    """Each line's seams (every one of SEAMS, which every line has), taken out of it."""
    return [{key: line.pop(key) for key in SEAMS} for line in lines]


def interrupt_at(step_to_fail: int):
    """An rl_step replacement that raises KeyboardInterrupt at the start of one step (a
    run killed there); monkeypatch it over rlvr.training.run.rl_step."""
    import rlvr.training.run as run_module

    real_step = run_module.rl_step

    def dying_step(trainer, step):
        if step == step_to_fail:
            raise KeyboardInterrupt
        return real_step(trainer, step)

    return dying_step


def plugin_reward(path: str) -> tuple[str, str]:
    """Overrides that make the test verifier `path` ("module:Class") the run's reward:
    listed in reward.plugins (the operator names code) and named by reward.verifier."""
    return f"reward.plugins=[{path}]", f"reward.verifier={path}"


def eight_sampled_rows():
    """(model, batch): a one-layer tiny model and eight rows it sampled (two prompts x
    four, eight new tokens, seed 3), packed on the CPU: a small real batch for update
    tests."""
    import torch

    from rlvr.rollout.base import SamplingParams
    from rlvr.rollout.hf import HFRolloutEngine
    from rlvr.training.batch import pack
    from rlvr.training.tiny import TinyModelSpec, char_tokenizer, tiny_llama

    torch.manual_seed(0)
    tokenizer = char_tokenizer()
    model = tiny_llama(tokenizer, TinyModelSpec(hidden_size=32, intermediate_size=64,
                                                num_layers=1, num_heads=2))
    groups = HFRolloutEngine(model, tokenizer).generate(
        ["abc", "12+34="], 4, SamplingParams(max_new_tokens=8, temperature=1.0, seed=3))
    batch = pack([c for g in groups for c in g], tokenizer.pad_token_id, torch.device("cpu"))
    return model, batch
