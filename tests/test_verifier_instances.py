"""Built verifiers are cached per (name, options), and the cache is bounded: a request
or data line may vary its grading options (a code check's timeout_s), and each distinct
set must not keep its own warm resources (a sandbox zygote) for the worker's life."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.verifiers import registry
from rlvr.verifiers.base import Verdict
from rlvr.verifiers.pool import Case, VerifierPool


class Held:
    """A verifier that records whether it was closed."""

    live: set[int] = set()

    def __init__(self, limit: float = 1.0) -> None:
        self.limit = limit
        Held.live.add(id(self))

    def verify(self, completion, reference, prompt=None) -> Verdict:
        return Verdict(1.0, True, "ok")

    def close(self) -> None:
        Held.live.discard(id(self))


def test_distinct_options_never_hold_more_than_the_bound():
    registry.register("held_probe", Held)
    first = registry.get_verifier("held_probe", limit=0.0)
    kept = []
    for i in range(1, 200):
        kept.append(registry.get_verifier("held_probe", limit=i / 1000))
        # the one in steady use stays cached: the same object, never closed
        assert registry.get_verifier("held_probe", limit=0.0) is first
    assert len(Held.live) <= registry.MAX_INSTANCES
    assert id(first) in Held.live and id(kept[-1]) in Held.live
    assert id(kept[0]) not in Held.live  # evicted long ago, and closed
    # an evicted option set is built afresh when asked for again
    again = registry.get_verifier("held_probe", limit=1 / 1000)
    assert again is not kept[0] and id(again) in Held.live


def _descendants(pid: int) -> int:
    """How many processes descend from `pid` (from /proc's parent links)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    count, todo = 0, list(children.get(pid, []))
    while todo:
        count += 1
        todo.extend(children.get(todo.pop(), []))
    return count


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_batch_of_distinct_code_limits_leaves_a_bounded_number_of_sandboxes():
    program = "def f(x):\n    return x + 1\n"
    reference = {"asserts": ["assert f(1) == 2"]}
    cases = [Case("code", program, reference, {"timeout_s": 2 + i / 100})
             for i in range(3 * registry.MAX_INSTANCES)]
    with VerifierPool(workers=1, timeout_s=60) as pool:
        verdicts = pool.verify(cases)
        assert [v.score for v in verdicts] == [1.0] * len(cases)
        # what the pool's one worker keeps running: at most MAX_INSTANCES verifiers'
        # sandbox trees, not one per distinct limit (unbounded: 6 * 48)
        [worker] = pool._workers
        held = _descendants(worker.process.pid)
    # measured here: one code verifier's zygote and judge sandboxes, 6 processes; one
    # more tree's worth of slack for a sandbox still being torn down
    per_verifier = 6
    assert held <= per_verifier * (registry.MAX_INSTANCES + 1), held
