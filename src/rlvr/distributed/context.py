"""The ranks of a run: who am I, how many are we, and the few collectives the trainer needs.

`Dist` with world == 1 is the single process: every method is the identity, and the
trainer calls them unconditionally, so one code path serves both. Under torchrun
(WORLD_SIZE > 1 in the environment) `init_from_env` joins the process group: gloo on
CPU, NCCL on GPUs, with a timeout on every collective, so a rank that died makes the
others fail with an error within `timeout_s` instead of waiting forever.

Shares: a step's prompts are split into contiguous shards, shard k generated with its
own seed; rank r takes the shards k with k % world == r. Gathers return rank order, so
concatenating them gives the shards in order, exactly as one process with the same
number of shards lays them out (rlvr.training.loop.collect_groups).
"""

from __future__ import annotations

import hashlib
import os
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Iterator, Sequence

import torch


class DistributedError(RuntimeError):
    """Ranks disagree (config, data) or a collective failed (a rank died, a timeout)."""


@dataclass
class Dist:
    rank: int = 0
    world: int = 1
    backend: str = ""

    @property
    def active(self) -> bool:
        return self.world > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def my_shards(self, shards: int) -> list[int]:
        """The shard indices this rank generates (shards is a multiple of world)."""
        return [k for k in range(shards) if k % self.world == self.rank]

    def gather(self, value: Any) -> list[Any]:
        """Every rank's `value` (any picklable object), in rank order."""
        if not self.active:
            return [value]
        out: list[Any] = [None] * self.world
        _collective("all_gather_object", torch.distributed.all_gather_object, out, value)
        return out

    def sum(self, tensor: torch.Tensor) -> torch.Tensor:
        """The element-wise sum over ranks (a new tensor; the input is left alone)."""
        if not self.active:
            return tensor
        total = tensor.detach().clone()
        _collective("all_reduce", torch.distributed.all_reduce, total)
        return total

    def barrier(self) -> None:
        if self.active:
            _collective("barrier", torch.distributed.barrier)

    def close(self) -> None:
        if self.active and torch.distributed.is_initialized():
            torch.distributed.destroy_process_group()


RESUME_HINT = ("another rank probably died: the run stops here and resumes from its last "
               "checkpoint (rlvr train --nproc N --resume RUN_DIR)")


def _collective(name: str, fn: Any, *args: Any) -> None:
    try:
        fn(*args)
    except Exception as exc:  # gloo/NCCL errors: a peer died, a timeout, a closed socket
        raise DistributedError(f"rank {torch.distributed.get_rank()}: {name} failed "
                               f"({type(exc).__name__}: {str(exc).splitlines()[0][:300]}); "
                               f"{RESUME_HINT}") from exc


_PEER_SIGNS = ("gloo", "NCCL", "Timed out", "Connection closed by peer", "Connection reset")


@contextmanager
def peer_failures(dist: Dist, what: str) -> Iterator[None]:
    """Collectives torch runs itself (FSDP2's all-gathers and reduce-scatters, DCP) fail
    with a bare RuntimeError when a peer dies or hangs: name the rank and the way back."""
    try:
        yield
    except DistributedError:
        raise
    except RuntimeError as exc:
        text = str(exc)
        if not dist.active or not (isinstance(exc, torch.distributed.DistError)
                                   or any(sign in text for sign in _PEER_SIGNS)):
            raise
        raise DistributedError(f"rank {dist.rank}: {what} failed ({type(exc).__name__}: "
                               f"{text.splitlines()[0][:300]}); {RESUME_HINT}") from exc


def launched_by_torchrun() -> bool:
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def init_from_env(device: str, timeout_s: float) -> Dist:
    """Join the process group torchrun describes (RANK, WORLD_SIZE, MASTER_ADDR...);
    Dist() when not launched by torchrun."""
    if not launched_by_torchrun():
        return Dist()
    backend = "nccl" if device.startswith("cuda") or device == "auto" and \
        torch.cuda.is_available() else "gloo"
    if not torch.distributed.is_initialized():
        torch.distributed.init_process_group(backend, timeout=timedelta(seconds=timeout_s))
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    return Dist(torch.distributed.get_rank(), torch.distributed.get_world_size(), backend)


def check_same(dist: Dist, what: str, text: str) -> None:
    """Every rank must hold the same `text` (a config, a data digest): start-up check."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    digests = dist.gather(digest)
    if len(set(digests)) > 1:
        odd = [r for r, d in enumerate(digests) if d != digests[0]]
        raise DistributedError(f"ranks disagree on the {what}: rank 0 has {digests[0]}, "
                               f"ranks {odd} differ; every rank must start from the same "
                               f"{what}")


def reduce_metrics(dist: Dist, metrics: dict[str, Any], keep: Sequence[str] = (),
                   tokens: float = 1.0, per_token: Sequence[str] = ()) -> dict[str, Any]:
    """One metrics line from every rank's: maxima for *max and time/*, minima for *min,
    sums for tokens_per_s, token-weighted means for the `per_token` keys (means over a
    rank's `tokens` tokens, which differ between ranks), plain means for the rest (ranks
    hold equal numbers of rows); keys in `keep` are already global and kept from this
    rank; strings from rank 0."""
    if not dist.active:
        return metrics
    lines = dist.gather((metrics, float(tokens)))
    weights = [w for _, w in lines]
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        values = [line.get(key) for line, _ in lines]
        if key in keep or not isinstance(value, (int, float)) or isinstance(value, bool) \
                or any(not isinstance(v, (int, float)) for v in values):
            out[key] = value
        elif key.endswith("max") or key.startswith("time/"):
            out[key] = max(values)
        elif key.endswith("min"):
            out[key] = min(values)
        elif key == "tokens_per_s":
            out[key] = sum(values)
        elif key in per_token and sum(weights) > 0:
            out[key] = sum(v * w for v, w in zip(values, weights)) / sum(weights)
        else:
            out[key] = sum(values) / len(values)
    return out
