"""The trainer's side of asynchronous rollouts (rollout.max_staleness = K >= 1): start the
producer process (rlvr.training.producer), publish the weights after every update, take
each step's groups from its queue, and stop it whenever the run ends.

    step s:  take prompts_per_step groups from the queue, in the producer's stream order,
             dropping those sampled more than K versions back (rlvr.training.staleness);
             they come graded (the producer's verifier pool, as each draw is sampled:
             rlvr.training.producer_grading); shape their rewards here (reward_tensor);
             update (decoupled PPO: rollout_correction auto = tis, pi_old recomputed);
             publish version s (shared-memory tensors + a counter, under a lock).

The producer's waits and failures stop the run as faults (exit 3, with the resume
command): no group within rollout.producer_timeout_s, or the producer process gone. A
resume starts a new producer at the checkpoint's data position, so the groups that were
sampled but not trained (in flight) are sampled again.
"""

from __future__ import annotations

import queue
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator

import torch

from rlvr.errors import ExternalFault
from rlvr.training.producer import ProducerSpec, StopFlag, producer_main
from rlvr.training.rewards import reward_tensor
from rlvr.training.staleness import SampledGroup, staleness_metrics, take_step_groups

if TYPE_CHECKING:
    from rlvr.training.loop import Groups, Trainer

POLL_S = 0.2  # how often a wait for groups checks that the producer is still alive
STOP_GRACE_S = 10.0  # a stopped producer finishes its generation call at most this long


class ProducerError(ExternalFault, RuntimeError):
    """The rollout producer died, failed or sent nothing in time; the run is sound up to
    its last checkpoint (exit 3)."""


class AsyncRollouts:
    """The producer process and what the trainer shares with it."""

    def __init__(self, t: "Trainer", first_step: int) -> None:
        cfg, ctx = t.cfg, torch.multiprocessing.get_context("spawn")
        self.cfg, self.last_idle, self.stats = cfg, 0.0, {}
        self.shared = {name: tensor.detach().to("cpu", copy=True).share_memory_()
                       for name, tensor in t.model.state_dict().items()}
        # version = updates applied: the weights step `first_step` trains
        # lock-free (producer.StopFlag says why): a killed producer holds neither
        self.version = ctx.RawValue("q", first_step - 1)
        self.lock, self.stop = ctx.Lock(), StopFlag(ctx)
        depth = (cfg.rollout.max_staleness + 1) * cfg.sampling.prompts_per_step
        self.groups, self.errors = ctx.Queue(maxsize=depth), ctx.Queue()
        spec = ProducerSpec(cfg, t.records, t.order.state_dict(), first_step,
                            type(t.model), t.model.config, t.tokenizer, self.shared,
                            self.version, self.lock, self.stop, self.groups, self.errors)
        self.process = ctx.Process(target=producer_main, args=(spec,), daemon=True,
                                   name="rlvr-rollout-producer")
        self.process.start()

    def collect(self, t: "Trainer", step: int, times: dict[str, float]) -> tuple["Groups", int]:
        """Step `step`'s groups, graded, as loop.collect_groups returns them; `times`
        gets generate and verify (the producer's seconds for these groups: grading
        overlapped sampling and the updates), trainer_idle and producer_idle."""
        from rlvr.training.loop import Groups

        cfg, s = self.cfg, self.cfg.sampling
        got = take_step_groups(lambda: self._receive(step), lambda: t.order.next(1)[0],
                               step, s.prompts_per_step, cfg.rollout.max_staleness)
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
        times["producer_idle"] = got.kept[-1].producer_idle_s - self.last_idle
        self.last_idle = got.kept[-1].producer_idle_s
        self.stats = {**staleness_metrics(got.lags, got.dropped, cfg.rollout.max_staleness),
                      "async/queue_depth": float(self._depth())}
        completions = [[e.completion for e in g] for g in episodes]
        sampled = [g.sampled_by() for g in got.kept]  # [P] each group's policy version
        return (Groups(records, completions, verdicts, rewards, {}, episodes, sampled=sampled),
                int(lengths.sum()))

    def publish(self, model: Any) -> None:
        """The updated weights for the producer: version += 1 once they are all written."""
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
        releases it, so the wait checks that the producer lives."""
        began = time.perf_counter()
        while not self.lock.acquire(timeout=POLL_S):
            if not self.process.is_alive():
                raise ProducerError(f"the rollout producer (pid {self.process.pid}) exited "
                                    f"with status {self.process.exitcode} while loading "
                                    "weights; a resume samples its groups again")
            if time.perf_counter() - began >= self.cfg.rollout.producer_timeout_s:
                raise ProducerError(f"the rollout producer (pid {self.process.pid}) held the "
                                    f"weights' lock for {time.perf_counter() - began:.1f} s")

    def _receive(self, step: int) -> SampledGroup:
        """The queue's next group; a ProducerError when the producer failed, exited, or
        sent nothing for rollout.producer_timeout_s."""
        timeout, began = self.cfg.rollout.producer_timeout_s, time.perf_counter()
        while True:
            self._raise_failure(step)
            waited = time.perf_counter() - began
            try:
                return self.groups.get(timeout=max(0.0, min(POLL_S, timeout - waited)))
            except queue.Empty:
                pass
            if not self.process.is_alive():
                try:  # what it put before it went
                    return self.groups.get(timeout=POLL_S)
                except queue.Empty:
                    self._raise_failure(step)
                    raise ProducerError(
                        f"the rollout producer (pid {self.process.pid}) exited with status "
                        f"{self.process.exitcode} while step {step} waited for its groups; "
                        "the groups it had sampled but the update had not trained are lost "
                        "(a resume samples them again)") from None
            if time.perf_counter() - began >= timeout:
                raise ProducerError(
                    f"step {step} waited {time.perf_counter() - began:.1f} s for the rollout "
                    f"producer (pid {self.process.pid}) and got no group "
                    f"(rollout.producer_timeout_s={timeout:g})")

    def _raise_failure(self, step: int) -> None:
        try:
            trace = self.errors.get_nowait()
        except queue.Empty:
            return
        raise ProducerError(f"the rollout producer (pid {self.process.pid}) failed while "
                            f"step {step} waited for its groups:\n{trace.rstrip()}")

    def _depth(self) -> int:
        try:
            return self.groups.qsize()
        except NotImplementedError:  # macOS has no sem_getvalue
            return -1

    def close(self) -> None:
        """Stop the producer: asked first, then terminated, then killed."""
        self.stop.set()
        self.process.join(STOP_GRACE_S)
        for end in (self.process.terminate, self.process.kill):
            if self.process.is_alive():
                end()
                self.process.join(STOP_GRACE_S)
        for q in (self.groups, self.errors):
            q.cancel_join_thread()
            q.close()


@contextmanager
def async_rollouts(t: "Trainer", first_step: int) -> Iterator[None]:
    """The producer for the RL steps from `first_step` on, as `t.producer`, stopped when
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
