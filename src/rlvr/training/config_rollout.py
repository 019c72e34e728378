"""The trainer config's `rollout` section: asynchronous rollouts (rlvr.training.producer,
rlvr.training.async_rollouts; docs/training.md, "Asynchronous rollouts"). Part of
TrainConfig (rlvr.training.config), in its own module to keep that file readable.

max_staleness 0 (the default) is the synchronous loop, untouched. K >= 1 samples in
`producers` producer processes up to K policy versions ahead of the update;
`check_async` refuses, at config load, the settings that path does not support yet;
`trainer_engine` names the engine the trainer builds for itself."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rlvr.config import ConfigError
from rlvr.training.config_fields import _doc

if TYPE_CHECKING:
    from rlvr.training.config import TrainConfig


@dataclass
class RolloutConfig:
    """Where and how far ahead the rollouts are sampled."""

    max_staleness: int = _doc(
        "K: how many policy versions the sampler may lag the update. 0 = synchronous (each "
        "step samples with the weights the update then trains, in this process). K >= 1: a "
        "producer process (rollout.producers of them) samples the next steps' groups, "
        "multi-turn episodes with their environment steps, while the update runs; a "
        "group sampled more than K updates before it is trained is dropped; the loss is "
        "decoupled PPO with truncated importance weights (docs/training.md, "
        "\"Asynchronous rollouts\")", default=0)
    producer_timeout_s: float = _doc(
        "K >= 1: seconds the update waits for a producer's next group before the run "
        "stops with an error naming that producer", default=600.0)
    producer_threads: int = _doc("K >= 1: torch CPU threads of each producer process",
                                 default=1)
    producers: int = _doc(
        "K >= 1: N producer processes sharing the sampling by step (producer i samples "
        "steps first+i, first+i+N, ...; each its own policy copy, engine, verifier pool "
        "and rollout.producer_threads threads; at most K + 1 sample at once); every "
        "step's draw is the same problems and seed as with one producer", default=1)

    def validate(self) -> None:
        if isinstance(self.max_staleness, bool) or self.max_staleness < 0:
            raise ConfigError(f"must be an integer >= 0, got {self.max_staleness!r}",
                              "max_staleness")
        if not self.producer_timeout_s > 0:
            raise ConfigError(f"must be > 0 seconds, got {self.producer_timeout_s!r}",
                              "producer_timeout_s")
        if self.producer_threads < 1:
            raise ConfigError(f"must be >= 1, got {self.producer_threads!r}",
                              "producer_threads")
        if isinstance(self.producers, bool) or self.producers < 1:
            raise ConfigError(f"must be an integer >= 1, got {self.producers!r}", "producers")
        if self.producers > 1 and not self.asynchronous:
            raise ConfigError(f"{self.producers} producers need rollout.max_staleness >= 1 "
                              "(0 samples in the trainer's process)", "producers")

    @property
    def asynchronous(self) -> bool:
        return self.max_staleness >= 1


def _on_cpu(device: str) -> bool:
    """Whether the trainer's model will live on the CPU: "cpu", or "auto" (a real
    model's default) on a machine without CUDA."""
    if device == "auto":
        import torch

        return not torch.cuda.is_available()
    return device == "cpu"


def check_async(cfg: "TrainConfig") -> None:
    """What rollout.max_staleness >= 1 cannot run with yet, named by field, before any
    model is built (torchrun's ranks: rlvr.training.config.check_distributed)."""
    if not cfg.rollout.asynchronous:
        return
    a, s = cfg.algorithm, cfg.sampling
    refusals = {
        "sampling.engine": (s.engine not in ("hf", "vllm"), "the producer runs the hf "
                            "engine on CPU or samples with a vLLM server"),
        "sampling.vllm.mode": (s.engine == "vllm" and s.vllm.mode != "server",
                               "the producer samples with a vLLM server only (a colocated "
                               "vLLM inside the producer process is not done): start one "
                               "with `rlvr vllm-serve` and set sampling.vllm.mode=server"),
        "rollout.producers": (s.engine == "vllm" and cfg.rollout.producers > 1,
                              "several producers would all write one vLLM server's weights "
                              "(each needs a server of its own, not done): use one"),
        "model.device": (not _on_cpu(cfg.model.device), "the producer and the update "
                         "share weights through CPU shared memory (a GPU trainer is not "
                         "done yet)"),
        "algorithm.dynamic_sampling": (a.dynamic_sampling, "its extra draws would need the "
                                       "producer to know which groups were uniform"),
        "model.lora.enabled": (cfg.model.lora.enabled, "the producer copies full weights"),
        "update.path": (cfg.update.path == "replay", "the producer's kept activations stay "
                        "in its process"),
        "algorithm.recompute_old_logprobs": (
            a.recompute_old_logprobs is False and a.rollout_correction.name != "none",
            "stale samples need the trainer's own pi_old for the correction"),
    }
    for name, (refused, why) in refusals.items():
        if refused:
            raise ConfigError(f"not supported with rollout.max_staleness="
                              f"{cfg.rollout.max_staleness} yet: {why}", name)


def trainer_engine(cfg: "TrainConfig") -> str:
    """The engine the trainer process builds for itself. K = 0: sampling.engine, which
    samples every step. K >= 1: hf, whatever the producer samples with; the trainer's
    engine then only runs the held-out evaluation, on the trainer's current weights (a
    vLLM server holds the producer's, up to K versions behind), and it must not write to
    the producer's vLLM server: one writer keeps the server's weights the ones the
    producer synced (a second would fail the producer's version check)."""
    return "hf" if cfg.rollout.asynchronous else cfg.sampling.engine
