"""The rollout producer's grading thread (rlvr.training.producer_grading) without a
producer process: draws graded in a thread with a stand-in pool, the groups put in
stream order with the verdicts and scores the trainer's grade_episodes gives, a failure
sent on at once and stopping the next hand-off; and the pool the producer builds grades
as the trainer's does (the same plugin verifier and options, real worker processes).
The end-to-end check on a real run: test_async_rollouts.py."""

from __future__ import annotations

import os
import queue
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from rlvr.data.records import TaskRecord
from rlvr.training.producer_grading import DrawGrader, GradingFailed, grade_draw
from rlvr.training.rewards import grade_episodes, scoring_pool
from rlvr.training.staleness import SampledGroup
from rlvr.verifiers.base import Verdict
from train_helpers import plugin_reward, tiny_config


class CountingPool:
    """A BatchVerifier: score = len(completion) / 10; remembers each batch's size."""

    def __init__(self, fail: bool = False) -> None:
        self.batches: list[int] = []
        self.fail = fail

    def verify(self, cases):
        if self.fail:
            raise OSError("the verifier servers went away")
        self.batches.append(len(cases))
        return [Verdict(len(c.completion) / 10, len(c.completion) > 3, "len") for c in cases]


def _record(i: int) -> TaskRecord:
    return TaskRecord(id=f"r{i}", prompt=f"task {i}", reference="", verifier="exact")


def _draw(texts: list[list[str]], first: int = 0):
    """Records [P] and ungraded groups [P] of stand-in episodes with these final texts."""
    records = [_record(first + p) for p in range(len(texts))]
    groups = [SampledGroup(first + p, first + p, 1, 0,
                           [SimpleNamespace(final_text=t, reward=None) for t in group])
              for p, group in enumerate(texts)]
    return records, groups


def _grader(pool):
    out: queue.Queue = queue.Queue()
    stop, errors = threading.Event(), queue.Queue()
    return DrawGrader(pool, "", {}, out.put, stop, errors), out, errors


def test_draws_are_graded_as_one_batch_each_and_put_in_stream_order():
    pool = CountingPool()
    grader, out, errors = _grader(pool)
    grader.submit(*_draw([["ab", "abcd"], ["abcde", ""]]))
    grader.submit(*_draw([["a", "abcdefghij"]], first=2))
    grader.close()
    got = [out.get_nowait() for _ in range(3)]
    assert out.empty() and errors.empty()
    assert [g.position for g in got] == [0, 1, 2]
    assert pool.batches == [4, 2]  # every episode of a draw in one call
    assert [g.scores for g in got] == [pytest.approx(row) for row in
                                       ([0.2, 0.4], [0.5, 0.0], [0.1, 1.0])]
    assert [[v.passed for v in g.verdicts] for g in got] == [[False, True], [True, False],
                                                             [False, True]]
    assert all(g.verify_s >= 0 for g in got)
    assert got[0].verify_s == got[1].verify_s  # an equal share of the first draw's seconds


def test_the_thread_grades_exactly_as_the_trainers_grade_episodes():
    records, groups = _draw([["12", "123456"], ["1234", "1"]])
    verdicts, scores = grade_episodes(CountingPool(), records, [g.episodes for g in groups])
    graded = grade_draw(CountingPool(), records, groups)
    assert [g.verdicts for g in graded] == verdicts
    assert [g.scores for g in graded] == scores.tolist()


def test_a_failed_grading_is_sent_at_once_and_stops_the_next_hand_off():
    grader, out, errors = _grader(CountingPool(fail=True))
    grader.submit(*_draw([["x"]]))
    trace = errors.get(timeout=30)  # sent by the thread itself, before any hand-off
    assert "grading thread failed" in trace and "the verifier servers went away" in trace
    with pytest.raises(GradingFailed):
        grader.submit(*_draw([["y"]], first=1))
    assert out.empty()


def test_a_stopped_producer_does_not_wait_for_the_thread():
    grader, _, _ = _grader(CountingPool())
    grader.stop.set()
    assert grader.submit(*_draw([["x"]])) >= 0  # returns: nothing handed in
    grader.close()  # returns without a join
    grader.thread.join(timeout=5)
    assert not grader.thread.is_alive()


@pytest.fixture
def _tests_importable(monkeypatch):
    """Verifier workers import the test reward by name."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent),
                                                      os.environ.get("PYTHONPATH", "")]))


def test_the_producers_pool_grades_as_the_trainers(_tests_importable):
    """Both built from the run's config by scoring_pool (the producer's without the
    evaluation verifier): a plugin reward gives the same verdicts through either."""
    cfg = tiny_config(*plugin_reward("train_helpers:LengthVerifier"))
    records, groups = _draw([["12", "1234567"], ["123", ""]])
    with scoring_pool(cfg, records, "cpu") as trainer_pool:
        expected, scores = grade_episodes(trainer_pool, records, [g.episodes for g in groups],
                                          cfg.reward.verifier, cfg.reward.options)
    with scoring_pool(cfg, records, "cpu", evaluation=False) as producer_pool:
        graded = grade_draw(producer_pool, records, groups, cfg.reward.verifier,
                            cfg.reward.options)
    assert [g.verdicts for g in graded] == expected
    # LengthVerifier: min(1, len / 6), by hand
    assert [g.scores for g in graded] == scores.tolist()
    assert sum(scores.tolist(), []) == pytest.approx([2 / 6, 1.0, 0.5, 0.0])


def test_each_shard_is_handed_to_grading_as_soon_as_it_is_sampled(monkeypatch):
    """sampling.generation_shards=2: the producer hands shard 0 to the grading thread
    before it samples shard 1 (so the thread grades the one while the other samples),
    each shard's groups with their own stream positions, record indices and sampling
    seconds, and the shard's prefix counters on its first group."""
    from rlvr.training import producer as producer_module

    events: list[str] = []
    counters = {"prefilled_tokens": 0, "reused_tokens": 0, "rows_not_kept": 0}

    def sample_shards(sampler, records, params):
        assert params.seed is not None and not params.keep_activations
        for k in range(2):
            part = records[2 * k:2 * k + 2]
            events.append(f"sampled {k}")
            counters["prefilled_tokens"] += 10 * (k + 1)
            yield part, [[SimpleNamespace(completion=SimpleNamespace(activations="kept"))]
                         for _ in part]

    class Grader:
        def submit(self, records, groups):
            events.append(f"submitted {[g.record_index for g in groups]}")
            self.groups = getattr(self, "groups", []) + groups
            return 0.0

    monkeypatch.setattr(producer_module, "sample_shards", sample_shards)
    producer = object.__new__(producer_module.Producer)
    producer.cfg = tiny_config("sampling.generation_shards=2")
    producer.spec = SimpleNamespace(first_step=3, index=0,
                                    records=[_record(i) for i in range(10)])
    producer.engine = SimpleNamespace(prefix_counters=lambda: counters)
    producer.sampler, producer.loaded, producer.idle_s = None, 2, 0.0
    grader = Grader()
    producer._produce(5, [7, 1, 4, 9], grader)
    assert events == ["sampled 0", "submitted [7, 1]", "sampled 1", "submitted [4, 9]"]
    # step 5 is the third draw from step 3: stream positions 8..11
    assert [(g.position, g.record_index, g.step, g.version) for g in grader.groups] == [
        (8, 7, 5, 2), (9, 1, 5, 2), (10, 4, 5, 2), (11, 9, 5, 2)]
    assert [g.prefix.get("prefilled_tokens") for g in grader.groups] == [10, None, 20, None]
    assert all(e.completion.activations is None for g in grader.groups for e in g.episodes)
    assert all(g.generate_s >= 0 for g in grader.groups)
