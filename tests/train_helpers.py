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
