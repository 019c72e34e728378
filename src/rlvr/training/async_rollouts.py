"""The trainer's side of asynchronous rollouts (rollout.max_staleness = K >= 1): start the
producer processes (rlvr.training.producer; rollout.producers of them, producer i
sampling steps first + i, first + i + N, ...), publish the weights after every update,
take each step's groups from the producers' queues, and stop them whenever the run ends.

    step s:  take prompts_per_step groups in stream order (step s's draw comes from
             producer (s - first) mod N: rlvr.training.producer_handles), dropping those
             sampled more than K versions back (rlvr.training.staleness); they come
             graded (the producer's verifier pool, as each draw is sampled:
             rlvr.training.producer_grading) and, for multi-turn episodes, with the
             environment's turns in place; shape their rewards here (reward_tensor);
             update (decoupled PPO: rollout_correction auto = tis, pi_old recomputed);
             publish version s (shared-memory tensors + a counter, under a lock).

The producers' waits and failures stop the run as faults (exit 3, with the resume
command), naming the producer: no group within rollout.producer_timeout_s, or a producer
process gone. A resume starts new producers at the checkpoint's data position, so the
groups that were sampled but not trained (in flight) are sampled again.
"""

from __future__ import annotations

import pickle
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

import torch

from rlvr.environments.registry import get_spec
from rlvr.errors import UserError
from rlvr.rollout.base import prefix_metrics
from rlvr.training.producer import ProducerSpec, StopFlag, producer_main
from rlvr.training.producer_handles import (POLL_S, ProducerError, ProducerHandle,
                                            ProducerSet)
from rlvr.training.rewards import reward_tensor
from rlvr.training.staleness import SampledGroup, staleness_metrics, take_step_groups

if TYPE_CHECKING:
    from rlvr.training.loop import Groups, Trainer

__all__ = ["AsyncRollouts", "ProducerError", "async_rollouts"]

STOP_GRACE_S = 10.0  # a stopped producer finishes its generation call at most this long


class AsyncRollouts:
    """The producer processes and what the trainer shares with them."""

    def __init__(self, t: "Trainer", first_step: int) -> None:
        cfg, ctx = t.cfg, torch.multiprocessing.get_context("spawn")
        self.cfg, self.stats = cfg, {}
        self.shared = {name: tensor.detach().to("cpu", copy=True).share_memory_()
                       for name, tensor in t.model.state_dict().items()}
        # version = updates applied: the weights step `first_step` trains
        # lock-free (producer.StopFlag says why): a killed producer holds neither
        self.version = ctx.RawValue("q", first_step - 1)
        self.lock, self.stop = ctx.Lock(), StopFlag(ctx)
        depth = (cfg.rollout.max_staleness + 1) * cfg.sampling.prompts_per_step
        count, environment = cfg.rollout.producers, _environment(cfg.episodes.environment)
        self.producers = ProducerSet([], cfg.sampling.prompts_per_step,
                                     cfg.rollout.producer_timeout_s)
        try:
            for index in range(count):
                groups, errors = ctx.Queue(maxsize=depth), ctx.Queue()
                spec = ProducerSpec(cfg, t.records, t.order.state_dict(), first_step, index,
                                    count, environment, type(t.model), t.model.config,
                                    t.tokenizer, self.shared, self.version, self.lock,
                                    self.stop, groups, errors)
                process = ctx.Process(target=producer_main, args=(spec,), daemon=True,
                                      name=f"rlvr-rollout-producer-{index}")
                self.producers.handles.append(ProducerHandle(index, count, first_step,
                                                             process, groups, errors))
                process.start()
        except BaseException:  # the ones already started are stopped
            self.close()
            raise

    def collect(self, t: "Trainer", step: int, times: dict[str, float]) -> tuple["Groups", int]:
        """Step `step`'s groups, graded, as loop.collect_groups returns them; `times`
        gets generate and verify (the producers' seconds for these groups: grading
        overlapped sampling and the updates), trainer_idle and producer_idle (summed
        over the producers of these groups: rlvr.training.producer_handles)."""
        from rlvr.training.loop import Groups

        cfg, s = self.cfg, self.cfg.sampling
        got = take_step_groups(lambda: self.producers.receive(step),
                               lambda: t.order.next(1)[0], step, s.prompts_per_step,
                               cfg.rollout.max_staleness)
        records = [t.records[g.record_index] for g in got.kept]
        episodes = [g.episodes for g in got.kept]  # [P][G]
        lengths = torch.tensor([[e.model_tokens for e in g] for g in episodes])  # [P, G]
        verdicts = [g.verdicts for g in got.kept]  # [P][G]
        scores = torch.tensor([g.scores for g in got.kept], dtype=torch.float32)  # [P, G]
        times["verify"] = sum(g.verify_s for g in got.kept)
        rewards = reward_tensor(scores, lengths, cfg.reward.overlong, s.max_new_tokens,
                                cfg.reward.overlong_buffer)  # [P, G]
        times["generate"] = sum(g.generate_s for g in got.kept)
        times["trainer_idle"] = got.waited_s
        times["producer_idle"] = self.producers.idle_since_last(got.kept)
        self.stats = {**staleness_metrics(got.lags, got.dropped, cfg.rollout.max_staleness),
                      "async/queue_depth": float(self.producers.depth())}
        completions = [[e.completion for e in g] for g in episodes]
        prefix = _prefix(got.kept) if s.reuse_prefix else {}
        sampled = [g.sampled_by() for g in got.kept]  # [P] each group's policy version
        return (Groups(records, completions, verdicts, rewards, {}, episodes, prefix,
                       sampled=sampled),
                int(lengths.sum()))

    def publish(self, model: Any) -> None:
        """The updated weights for the producers: version += 1 once they are all written."""
        self._acquire()
        try:
            with torch.no_grad():
                for name, tensor in model.state_dict().items():
                    self.shared[name].copy_(tensor)
            self.version.value += 1
        finally:
            self.lock.release()

    def _acquire(self) -> None:
        """The weights' lock; a producer killed while it held it (loading weights) never
        releases it, so the wait checks that the producers live."""
        began = time.perf_counter()
        while not self.lock.acquire(timeout=POLL_S):
            dead = self.producers.dead()
            if dead is not None:
                raise ProducerError(f"{dead} exited with status {dead.process.exitcode} "
                                    "while loading weights (the update cannot publish); "
                                    "a resume samples its groups again")
            if time.perf_counter() - began >= self.cfg.rollout.producer_timeout_s:
                pids = ", ".join(str(h.process.pid) for h in self.producers.handles)
                raise ProducerError(f"a rollout producer (pids {pids}) held the weights' "
                                    f"lock for {time.perf_counter() - began:.1f} s")

    def close(self) -> None:
        """Stop the producers: asked first, then terminated, then killed."""
        self.stop.set()
        processes = [h.process for h in self.producers.handles if h.process.pid is not None]
        deadline = time.perf_counter() + STOP_GRACE_S
        for process in processes:
            process.join(max(0.0, deadline - time.perf_counter()))
        for end in ("terminate", "kill"):
            alive = [p for p in processes if p.is_alive()]
            for process in alive:
                getattr(process, end)()
            for process in alive:
                process.join(STOP_GRACE_S)
        for handle in self.producers.handles:
            if handle.relay is not None:
                handle.relay.close()
            for q in (handle.groups, handle.errors):
                q.cancel_join_thread()
                q.close()


def _environment(name: str) -> Any:
    """The registry entry for episodes.environment, for the producers (spawned: a fresh
    interpreter knows the built-in environments, not one the operator's program
    registered, so the entry travels with them and must pickle)."""
    spec = get_spec(name)
    try:
        pickle.dumps(spec)
    except Exception as error:  # a lambda or a local function as the factory
        raise UserError(f"episodes.environment: {name!r} cannot be sent to the rollout "
                        f"producer process ({error}); register it with a module-level "
                        "factory to run it with rollout.max_staleness >= 1") from None
    return spec


def _prefix(kept: list[SampledGroup]) -> dict[str, float]:
    """rollout/prefix_* of the draws these groups came from (each draw's counters ride
    on its first group): what the synchronous loop reports for its draw."""
    totals: dict[str, int] = {}
    for group in kept:
        for name, value in group.prefix.items():
            totals[name] = totals.get(name, 0) + value
    return prefix_metrics({}, totals)


@contextmanager
def async_rollouts(t: "Trainer", first_step: int) -> Iterator[None]:
    """The producers for the RL steps from `first_step` on, as `t.producer`, stopped when
    they end however they end. rollout.max_staleness = 0: nothing at all."""
    if not t.cfg.rollout.asynchronous:
        yield
        return
    t.producer = AsyncRollouts(t, first_step)
    try:
        yield
    finally:
        t.producer.close()
        t.producer = None
