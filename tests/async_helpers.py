"""What the asynchronous-rollout tests record inside the trainer's process (the groups
each step trained, with their versions and producers, and the completions handed to the
update) and how they draw a step again through the synchronous loop's sampler."""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Sequence

import pytest

from rlvr.distributed.context import Dist
from rlvr.episodes.render import TurnRenderer
from rlvr.rollout.base import SamplingParams
from rlvr.rollout.factory import build_engine
from rlvr.training import async_rollouts, loop
from rlvr.training.prompt_order import take
from rlvr.training.setup import engine_options, load_policy, prompt_renderer


class Recorder:
    """While installed (monkeypatch): `kept[step]` = (record index, version, producer,
    draw step) of every group the step trained (asynchronous runs only), `packed[step]`
    = the completions `pack` got for the update, `trainer` = the run's Trainer."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.kept: dict[int, list[tuple[int, int, int, int]]] = {}
        self.packed: dict[int, list[Any]] = {}
        self.trainer: Any = None
        self.step = 0
        real_take, real_pack = async_rollouts.take_step_groups, loop.pack

        def take_step_groups(*args, **kwargs):
            got = real_take(*args, **kwargs)
            self.kept[self.step] = [(g.record_index, g.version, g.producer, g.step)
                                    for g in got.kept]
            return got

        def pack(completions, pad_id, device):
            self.packed[self.step] = list(completions)
            return real_pack(completions, pad_id, device)

        import rlvr.training.run as run_module

        real_step = run_module.rl_step

        def rl_step(trainer, number):
            self.trainer, self.step = trainer, number
            return real_step(trainer, number)

        monkeypatch.setattr(async_rollouts, "take_step_groups", take_step_groups)
        monkeypatch.setattr(loop, "pack", pack)
        monkeypatch.setattr(run_module, "rl_step", rl_step)

    def draw(self, step: int) -> tuple[list[int], int]:
        """Step `step`'s trained record indices and the one version that sampled them
        all (the producer loads weights once per draw)."""
        kept = self.kept[step]
        versions = {version for _, version, _, _ in kept}
        assert len(versions) == 1, (step, kept)
        return [index for index, *_ in kept], versions.pop()


def replay_draw(run: Path, trainer: Any, step: int, indices: list[int], version: int
                ) -> list[Any]:
    """Step `step`'s draw sampled again as the synchronous loop samples it: the policy
    loaded from the checkpoint of `version` (its step's weights) by the trainer's own
    loader, the engine, turn renderer and environment built as run.py builds the
    trainer's, generate_shards with the step's seed. The completions, [P * G]."""
    cfg, s = trainer.cfg, trainer.cfg.sampling
    model, tokenizer = load_policy(cfg.model, cfg.seed,
                                   run / f"checkpoints/step-{version:06d}")
    sampler = SimpleNamespace(
        cfg=cfg, dist=Dist(), engine=build_engine(s.engine, model, tokenizer,
                                                  engine_options(cfg)),
        turns=TurnRenderer(prompt_renderer(cfg.prompt, tokenizer)),
        make_env=loop.run_environment(cfg, tokenizer))
    params = SamplingParams(max_new_tokens=s.max_new_tokens, temperature=s.temperature,
                            top_p=s.top_p, top_k=s.top_k, stop=tuple(s.stop),
                            seed=loop._sampling_seed(cfg.seed, step, 0))
    _, episodes = loop.generate_shards(sampler, take(trainer.records, indices), params)
    return [episode.completion for group in episodes for episode in group]


def same_completions(got: list[Any], expected: list[Any]) -> None:
    """Token for token, mask for mask, log-prob for log-prob."""
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        assert (a.prompt_ids, a.token_ids, a.loss_mask, a.finish_reason) == \
            (b.prompt_ids, b.token_ids, b.loss_mask, b.finish_reason)
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-6)


def metrics(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


def rollouts(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "rollouts.jsonl").read_text().splitlines()]


def prompts_per_step(run: Path) -> dict[int, list[str]]:
    steps: dict[int, list[str]] = {}
    for row in rollouts(run):
        if row["sample"] == 0:
            steps.setdefault(row["step"], []).append(row["prompt_id"])
    return steps


class TwoTurns:
    """A test environment the built-in registry lacks: "again" after the first turn, the
    second rewarded by its length (6 characters: 1.0); `info` goes with every reply
    (tests/test_train_episodes.py: one tool call a turn)."""

    tools = ()

    def __init__(self, limits, info: dict | None = None):
        self.limits, self.turn, self.info = limits, 0, dict(info or {})

    def reset(self, task):
        return [{"role": "user", "content": task.prompt}]

    def step(self, turn):
        from rlvr.episodes.base import Reply

        self.turn += 1
        if self.turn == 1:
            return Reply([{"role": "user", "content": "again"}], info=dict(self.info))
        return Reply(done=True, reward=min(1.0, len(turn) / 6), info=dict(self.info))

    def close(self):
        pass


def two_turns(record, options, limits):
    """TwoTurns' factory, at module level: a spawned producer can import it."""
    return TwoTurns(limits)


def tests_on_pythonpath() -> str:
    """PYTHONPATH with the tests folder first: verifier workers (the producers' too)
    import the tests' rewards by name."""
    return os.pathsep.join([str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")])


# test files import it by name, and its name starts with "test": not a test itself
tests_on_pythonpath.__test__ = False  # type: ignore[attr-defined]


def synchronous_run(tmp_path_factory: Any, overrides: Sequence[str]) -> Path:
    """The synchronous run of the tiny config with `overrides`, in a fresh directory."""
    from rlvr.training.run import train
    from train_helpers import tiny_config

    run = tmp_path_factory.mktemp("sync") / "run"
    os.environ["PYTHONPATH"] = tests_on_pythonpath()
    train(tiny_config(*overrides), run)
    return run
