"""The rollout producer: a process (multiprocessing spawn) that samples the next steps'
groups while the trainer updates (rollout.max_staleness = K >= 1; docs/training.md,
"Asynchronous rollouts").

It owns a private copy of the policy and the run's rollout engine on CPU, with its own
torch threads. With rollout.producers = N it is one of N such processes, producer i
sampling steps first_step + i, first_step + i + N, ...: it draws problems in the
trainer's data order (a PromptOrder started from the trainer's position) and skips the
other producers' draws (StepDraws), so step s's draw is the problems one producer would
draw, sampled with the synchronous run's seed for that step. Before each step's
generation it waits until the trainer has published version >= step - 1 - K (so it runs
at most K versions ahead: the wait is `time/producer_idle`), then loads the newest
published weights; every group of that draw is tagged with the version it loaded, so no
group reports a version newer than the weights that sampled it. A step's episodes run
here whole: multi-turn episodes call their environment (make_env: loop.run_environment,
from episodes.environment as the trainer builds its own) between the model's turns, so the
groups arrive with the environment's tokens in place and masked (Completion.loss_mask).
An engine that samples elsewhere (a vLLM server, whose only writer this process is)
gets the loaded weights, named by their version, before the draw and says which
weights sampled it: any other than the loaded version stops the producer, and the run.
Each draw is graded as soon as it is sampled, by a thread of this process
(rlvr.training.producer_grading) with its own verifier pool built from the run's reward
config exactly as the trainer builds its own (rewards.scoring_pool), while the main
thread samples the next draw; the groups go on this producer's bounded queue with their
verdicts and scores, and the trainer only shapes the rewards (reward_tensor).

The trainer side (publishing weights, taking groups, stopping these processes) is
rlvr.training.async_rollouts.
"""

from __future__ import annotations

import queue
import signal
import time
import traceback
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch

from rlvr.data.records import TaskRecord
from rlvr.distributed.context import Dist
from rlvr.episodes.render import TurnRenderer
from rlvr.environments import registry
from rlvr.rollout.base import SamplingParams, prefix_counters
from rlvr.rollout.factory import build_engine
from rlvr.training.config import TrainConfig
from rlvr.training.loop import _sampling_seed, run_environment, sample_shards
from rlvr.training.producer_grading import DrawGrader, GradingFailed
from rlvr.training.prompt_order import PromptOrder, take
from rlvr.training.rewards import scoring_pool
from rlvr.training.setup import engine_options, prompt_renderer
from rlvr.training.staleness import SampledGroup

POLL_S = 0.005  # how often a wait looks again at the version counter and the stop flag


class StopFlag:
    """The trainer's "stop" to the producer, a byte in shared memory read and written
    without a lock. Why not multiprocessing.Event: it takes a shared lock even to read,
    and this process polls it every few milliseconds, so a producer killed mid-read
    leaves that lock held and the trainer's set() then waits forever (seen in CI: the
    killed-producer test hung in AsyncRollouts.close). The published version is a
    lock-free RawValue for the same reason (one writer, the trainer)."""

    def __init__(self, ctx: Any) -> None:
        self._flag = ctx.RawValue("b", 0)

    def set(self) -> None:
        self._flag.value = 1

    def is_set(self) -> bool:
        return bool(self._flag.value)

    def wait(self, timeout: float) -> bool:
        """Sleep up to `timeout` unless already set; whether it is set."""
        if not self.is_set():
            time.sleep(timeout)
        return self.is_set()


@dataclass
class ProducerSpec:
    """Everything the producer process is started with (pickled by spawn; the weight
    tensors and the counters are shared with the trainer, not copied)."""

    cfg: TrainConfig
    records: list[TaskRecord]
    order_state: dict[str, int]    # the trainer's PromptOrder position at the start
    first_step: int
    index: int                     # this producer's number, 0 .. count - 1
    count: int                     # rollout.producers
    environment: Any               # the trainer's registry entry for episodes.environment
    model_class: type
    model_config: Any
    tokenizer: Any
    shared: dict[str, torch.Tensor]  # the published weights (shared memory)
    version: Any                     # lock-free RawValue: the published version
    lock: Any                        # held while the weights are written or read
    stop: Any                        # StopFlag: the trainer is done
    groups: Any                      # bounded Queue of SampledGroup (this producer's)
    errors: Any                      # Queue: a traceback when this producer fails


class StepDraws:
    """Producer `index` of `count`'s steps and their draws: steps first_step + index,
    + count, ...; each step's draw is the `per_step` indices the trainer's single
    PromptOrder gives that step, the other producers' draws skipped."""

    def __init__(self, order: PromptOrder, first_step: int, index: int, count: int,
                 per_step: int) -> None:
        self.order, self.count, self.per_step = order, count, per_step
        self.step = first_step + index
        order.next(index * per_step)  # the draws of the steps before this producer's first

    def next(self) -> tuple[int, list[int]]:
        """(step, its record indices); then on to this producer's next step."""
        step, indices = self.step, self.order.next(self.per_step)
        self.order.next((self.count - 1) * self.per_step)  # the others' steps in between
        self.step += self.count
        return step, indices


def producer_main(spec: ProducerSpec) -> None:
    """The process's entry point: produce until told to stop; an error's traceback goes
    to the trainer (which stops the run naming this process) and the exit status is 1."""
    spec.groups.cancel_join_thread()  # exiting never waits for the trainer to drain
    signal.signal(signal.SIGTERM, _terminated)  # the trainer's terminate() unwinds too
    producer = None
    try:
        producer = Producer(spec)
        producer.run()
    except (KeyboardInterrupt, Terminated):  # Ctrl-C reaches the whole process group,
        return                                # terminate() only this: the trainer stops
    except GradingFailed:  # the grading thread sent its traceback already
        raise SystemExit(1)
    except BaseException:
        spec.errors.put(traceback.format_exc())
        raise SystemExit(1)
    finally:
        if producer is not None:
            producer.close()


class Terminated(BaseException):
    """SIGTERM from the trainer (AsyncRollouts.close); a BaseException so that no
    `except Exception` on the way catches it."""


def _terminated(signum: int, frame: Any) -> None:
    raise Terminated()


class SamplerMismatch(RuntimeError):
    """The engine sampled a draw with other weights than the producer loaded."""


class Producer:
    def __init__(self, spec: ProducerSpec) -> None:
        cfg = spec.cfg
        torch.set_num_threads(cfg.rollout.producer_threads)
        self.spec, self.cfg = spec, cfg
        dtype = next(iter(spec.shared.values())).dtype
        self.model = spec.model_class(spec.model_config).to(dtype).eval().requires_grad_(False)
        self.engine = build_engine(cfg.sampling.engine, self.model, spec.tokenizer,
                                   engine_options(cfg))
        renderer = prompt_renderer(cfg.prompt, spec.tokenizer)
        # an environment the operator's program registered is not in this fresh
        # interpreter's registry: the trainer's entry came with the spec
        if spec.environment.name not in registry.known():
            registry.register(spec.environment)
        # what loop.generate_shards reads of a Trainer: one process, the run's shards
        self.sampler = SimpleNamespace(cfg=cfg, dist=Dist(), engine=self.engine,
                                       turns=TurnRenderer(renderer),
                                       make_env=run_environment(cfg, spec.tokenizer))
        order = PromptOrder(len(spec.records), cfg.seed)
        order.load_state_dict(spec.order_state)
        self.draws = StepDraws(order, spec.first_step, spec.index, spec.count,
                               cfg.sampling.prompts_per_step)
        self.loaded = -1   # the version in self.model (-1: none yet)
        self.idle_s = 0.0  # seconds spent waiting for room

    def run(self) -> None:
        cfg, spec = self.cfg, self.spec
        # on CPU: asynchronous rollouts run with model.device cpu (config_rollout)
        with scoring_pool(cfg, spec.records, "cpu", evaluation=False) as pool:
            grader = DrawGrader(pool, cfg.reward.verifier, cfg.reward.options, self._put,
                                spec.stop, spec.errors)
            while self._wait_for_room(self.draws.step):
                self._load_newest()
                self._produce(*self.draws.next(), grader)
            grader.close()

    def _wait_for_room(self, step: int) -> bool:
        """Wait until the trainer published version >= step - 1 - K; False: stop."""
        began = time.perf_counter()
        needed = step - 1 - self.cfg.rollout.max_staleness
        while self.spec.version.value < needed:
            if self.spec.stop.wait(POLL_S):
                return False
        self.idle_s += time.perf_counter() - began
        return not self.spec.stop.is_set()

    def _load_newest(self) -> None:
        """The newest published weights into the private copy (the trainer never writes
        them while this holds the lock)."""
        with self.spec.lock:
            version = self.spec.version.value
            if version == self.loaded:
                return
            with torch.no_grad():
                for name, tensor in self.model.state_dict().items():
                    tensor.copy_(self.spec.shared[name])
        self.loaded = version
        self.engine.sync_weights(self.model, version=version)  # named: vLLM reports it

    def _produce(self, step: int, indices: list[int], grader: DrawGrader) -> None:
        """Step `step`'s draw (`indices`), sampled as the synchronous run samples it (one
        call per shard, the step's seeds; episodes with all their turns), each shard
        handed to the grading thread as soon as it is sampled: with
        sampling.generation_shards > 1 the first shards are graded while the later ones
        are sampled."""
        s = self.cfg.sampling
        params = SamplingParams(max_new_tokens=s.max_new_tokens, temperature=s.temperature,
                                top_p=s.top_p, top_k=s.top_k, stop=tuple(s.stop),
                                seed=_sampling_seed(self.cfg.seed, step, 0),
                                keep_activations=False)
        start = (step - self.spec.first_step) * len(indices)  # stream position: all producers'
        offset, began, counters = 0, time.perf_counter(), prefix_counters(self.engine)
        for records, episodes in sample_shards(self.sampler, take(self.spec.records, indices),
                                               params):
            share = (time.perf_counter() - began) / len(records)
            after = prefix_counters(self.engine)
            groups = self._groups(step, start + offset,
                                  indices[offset:offset + len(records)], episodes, share)
            # the shard's prefix reuse rides on its first group (counters per engine call)
            groups[0].prefix = {name: after[name] - counters.get(name, 0) for name in after}
            # waiting while the thread still grades the shard before: idle too
            self.idle_s += grader.submit(records, groups)
            offset += len(records)
            began, counters = time.perf_counter(), after

    def _groups(self, step: int, position: int, indices: list[int],
                episodes: list[list[Any]], share: float) -> list[SampledGroup]:
        """One shard's groups, ungraded, from stream position `position` on."""
        served = self._sampled_version(step)
        groups = []
        for k, (index, group) in enumerate(zip(indices, episodes)):
            for episode in group:  # nothing process-local crosses the queue
                episode.completion.activations = None
            groups.append(SampledGroup(position + k, index, step, self.loaded, group, share,
                                       self.idle_s, producer=self.spec.index,
                                       served_version=served))
        return groups

    def _sampled_version(self, step: int) -> int | None:
        """The version an engine that samples elsewhere (vLLM) says sampled the draw,
        which must be the one loaded; None for an engine sampling this process's copy."""
        if not hasattr(self.engine, "sampled_policy_version"):
            return None
        served = self.engine.sampled_policy_version
        if served != self.loaded:
            raise SamplerMismatch(f"the rollout engine sampled step {step}'s draw with "
                                  f"policy version {served}, but this producer loaded and "
                                  f"synced version {self.loaded}: its groups would report "
                                  "weights that did not sample them")
        return served

    def close(self) -> None:
        """The engine's own state goes with the process (vLLM: its files in /dev/shm)."""
        getattr(self.engine, "close", lambda: None)()

    def _put(self, group: SampledGroup) -> None:
        """One graded group on the trainer's queue (the grading thread calls it); a full
        queue waits, which the main thread's next wait for room counts."""
        while not self.spec.stop.is_set():
            try:
                self.spec.groups.put(group, timeout=0.1)
                return
            except queue.Full:  # the trainer has not taken enough yet
                continue
