"""Asynchronous rollouts without a producer process: the `rollout` config section and
its refusals, the staleness filter on a hand-made stream of groups, the staleness
metrics, and the trainer's wait for a producer that sends nothing (rlvr.training.
staleness, rlvr.training.async_rollouts)."""

from __future__ import annotations

import multiprocessing
import os
import queue
import re
import struct
import threading
from types import SimpleNamespace

import pytest

from rlvr.config import ConfigError
from rlvr.errors import ExternalFault
from rlvr.training.async_rollouts import AsyncRollouts, ProducerError
from rlvr.training.producer_handles import ProducerHandle, ProducerSet
from rlvr.training.config import check_distributed
from rlvr.training.staleness import (OrderMismatch, SampledGroup, staleness_metrics,
                                     take_step_groups)
from train_helpers import tiny_config


@pytest.mark.parametrize("override, field", [
    ("rollout.max_staleness=-1", "rollout.max_staleness"),
    ("rollout.producer_timeout_s=0", "rollout.producer_timeout_s"),
    ("rollout.producer_threads=0", "rollout.producer_threads"),
    ("rollout.producers=0", "rollout.producers"),
    ("rollout.producers=-2", "rollout.producers"),
])
def test_bad_values_name_their_field(override, field):
    with pytest.raises(ConfigError, match=re.escape(field)):
        tiny_config(override)


@pytest.mark.parametrize("override, field", [
    ("algorithm.dynamic_sampling=true", "algorithm.dynamic_sampling"),
    ("update.path=replay", "update.path"),
    ("model.device=cuda", "model.device"),
    ("algorithm.recompute_old_logprobs=false", "algorithm.recompute_old_logprobs"),
])
def test_unsupported_combinations_are_refused_at_load(override, field):
    tiny_config(override)  # fine synchronously
    with pytest.raises(ConfigError, match=re.escape(field) + ".*max_staleness=2"):
        tiny_config("rollout.max_staleness=2", override)


def test_several_producers_need_asynchronous_rollouts():
    assert tiny_config("rollout.max_staleness=1", "rollout.producers=3").rollout.producers == 3
    with pytest.raises(ConfigError, match=re.escape("rollout.producers")):
        tiny_config("rollout.producers=2")  # max_staleness 0: the trainer samples


def test_multi_turn_episodes_run_asynchronously():
    cfg = tiny_config("rollout.max_staleness=1", "episodes.environment=guess_number",
                      "episodes.max_turns=3")
    assert cfg.rollout.asynchronous and cfg.episodes.max_turns == 3


def test_a_real_models_auto_device_runs_asynchronously_on_a_cpu_machine(monkeypatch):
    # a real model's profile sets model.device=auto; it is the CPU where CUDA is absent
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert tiny_config("rollout.max_staleness=1", "model.device=auto").rollout.asynchronous
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    with pytest.raises(ConfigError, match="model.device"):
        tiny_config("rollout.max_staleness=1", "model.device=auto")


def test_torchrun_refuses_asynchronous_rollouts():
    check_distributed(tiny_config("rollout.max_staleness=1", "sft.steps=0"), 1)
    with pytest.raises(ConfigError, match="rollout.max_staleness"):
        check_distributed(tiny_config("rollout.max_staleness=1", "sft.steps=0"), 2)


def _stream(versions, start=0):
    """Groups at stream positions start.., record index = position, the given versions."""
    return [SampledGroup(start + i, start + i, 5, v) for i, v in enumerate(versions)]


def test_stale_groups_are_dropped_counted_and_replaced_in_stream_order():
    # step 5 trains version-4 weights: lag = 4 - version; K = 1 keeps lags 0 and 1
    stream = iter(_stream([4, 2, 3, 1, 4, 3]))
    order = iter(range(100))
    got = take_step_groups(lambda: next(stream), lambda: next(order), step=5, count=3,
                           max_staleness=1)
    assert [g.position for g in got.kept] == [0, 2, 4]
    assert got.lags == [0, 1, 0] and got.dropped == 2
    assert next(stream).position == 5  # nothing taken past the third fresh group
    assert next(order) == 5  # the data order advanced once per group consumed, dropped too


def test_k0_keeps_only_the_current_version():
    stream = iter(_stream([3, 4, 4]))
    order = iter(range(100))
    got = take_step_groups(lambda: next(stream), lambda: next(order), 5, 2, 0)
    assert [g.version for g in got.kept] == [4, 4] and got.dropped == 1


def test_a_group_off_the_data_order_is_a_bug():
    stream = iter(_stream([4, 4]))
    order = iter([0, 7])
    with pytest.raises(OrderMismatch, match="record 1; the data order says 7"):
        take_step_groups(lambda: next(stream), lambda: next(order), 5, 2, 1)


def test_staleness_metrics_by_hand():
    m = staleness_metrics([0, 2, 2, 1], dropped=3, max_staleness=2)
    assert m == {"staleness/mean": 1.25, "staleness/max": 2.0, "async/dropped_groups": 3.0,
                 "staleness/lag_0": 1.0, "staleness/lag_1": 1.0, "staleness/lag_2": 2.0}


def _handle(index=0, count=1, alive=True, exitcode=None, pid=4242) -> ProducerHandle:
    """A producer's handle on an empty queue and a stand-in process."""
    process = SimpleNamespace(pid=pid, exitcode=exitcode, is_alive=lambda: alive)
    return ProducerHandle(index, count, 1, process, queue.Queue(), queue.Queue())


def _waiting_trainer(alive: bool, timeout_s: float, exitcode=None) -> ProducerSet:
    """The trainer's waits on one producer (as AsyncRollouts holds them)."""
    return ProducerSet([_handle(alive=alive, exitcode=exitcode)], per_step=4,
                       timeout_s=timeout_s)


def test_an_empty_queue_times_out_naming_the_producer_and_the_wait():
    with pytest.raises(ProducerError) as caught:
        _waiting_trainer(alive=True, timeout_s=0.3).receive(step=3)
    assert isinstance(caught.value, ExternalFault)  # exit 3 with the resume command
    text = str(caught.value)
    assert "producer (pid 4242)" in text and "step 3" in text
    waited = float(re.search(r"waited ([0-9.]+) s", text).group(1))
    assert waited >= 0.3 and "producer_timeout_s=0.3" in text


def test_a_dead_producer_is_reported_with_its_status():
    with pytest.raises(ProducerError, match=r"pid 4242\) exited with status -9"):
        _waiting_trainer(alive=False, timeout_s=60, exitcode=-9).receive(step=2)


def test_a_failed_producer_passes_its_traceback_on():
    side = _waiting_trainer(alive=True, timeout_s=60)
    side.handles[0].errors.put("Traceback ...\nValueError: boom\n")
    with pytest.raises(ProducerError, match="(?s)pid 4242\\) failed.*ValueError: boom"):
        side.receive(step=2)


def test_a_producer_killed_holding_the_weights_lock_does_not_hang_the_publish():
    import threading

    side = object.__new__(AsyncRollouts)
    side.cfg = tiny_config("rollout.producer_timeout_s=60")
    side.producers = _waiting_trainer(alive=False, timeout_s=60, exitcode=-9)
    side.lock = threading.Lock()
    side.lock.acquire()  # as a producer SIGKILLed while it loaded weights leaves it
    with pytest.raises(ProducerError, match=r"pid 4242\) exited with status -9 while loading"):
        side.publish(model=None)


# -- several producers (rollout.producers = N) --------------------------------------


def _two_producers(timeout_s=60.0, second_alive=True, exitcode=None) -> ProducerSet:
    return ProducerSet([_handle(0, 2, pid=100),
                        _handle(1, 2, alive=second_alive, exitcode=exitcode, pid=101)],
                       per_step=2, timeout_s=timeout_s)


def test_the_stream_takes_each_steps_draw_from_its_producer_in_order():
    # P = 2, N = 2: positions 0-1 step 1 (producer 0), 2-3 step 2 (producer 1), 4-5 step 3
    side = _two_producers()
    for position in range(6):
        owner = side.handles[(position // 2) % 2]
        owner.groups.put(SampledGroup(position, position, 1 + position // 2, 0,
                                      producer=owner.index))
    # taken in position order across the two queues (so a step that drops a stale
    # group gets the next draw's first group in its place, as with one producer)
    got = [side.receive(step=1).position for _ in range(6)]
    assert got == [0, 1, 2, 3, 4, 5] and side.taken == 6


def test_a_late_producer_is_named_with_its_index_pid_and_steps():
    side = _two_producers(timeout_s=0.3)
    side.handles[0].groups.put(SampledGroup(0, 0, 1, 0))
    side.handles[0].groups.put(SampledGroup(1, 1, 1, 0))
    side.receive(step=1), side.receive(step=1)  # step 1's draw: producer 0's
    with pytest.raises(ProducerError) as caught:
        side.receive(step=2)  # producer 1 sends nothing
    text = str(caught.value)
    assert "step 2 waited" in text and "rollout producer 1 of 2 (pid 101; steps 2, 4, 6" in text


def test_a_dead_producer_stops_the_wait_for_another_producers_groups():
    side = _two_producers(second_alive=False, exitcode=-9)
    with pytest.raises(ProducerError,
                       match=r"rollout producer 1 of 2 \(pid 101.*exited with status -9"):
        side.receive(step=1)  # waiting on producer 0, whose queue is empty


def test_a_failed_producer_is_named_whichever_queue_the_step_waits_on():
    side = _two_producers()
    side.handles[1].errors.put("Traceback ...\nKeyError: 'x'\n")
    with pytest.raises(ProducerError, match="(?s)producer 1 of 2 \\(pid 101.*failed.*KeyError"):
        side.receive(step=1)


def test_producer_idle_sums_each_producers_increase_since_its_last_trained_group():
    side = _two_producers()
    # running totals each producer put on its groups
    step1 = [SampledGroup(0, 0, 1, 0, producer_idle_s=1.0, producer=0),
             SampledGroup(1, 1, 1, 0, producer_idle_s=1.5, producer=0)]
    assert side.idle_since_last(step1) == 1.5
    step2 = [SampledGroup(2, 2, 2, 0, producer_idle_s=4.0, producer=1)] * 2
    assert side.idle_since_last(step2) == 4.0
    # a step whose groups came from both (a stale group replaced by the next draw's)
    step3 = [SampledGroup(4, 4, 3, 1, producer_idle_s=2.5, producer=0),
             SampledGroup(6, 6, 4, 2, producer_idle_s=6.0, producer=1)]
    assert side.idle_since_last(step3) == pytest.approx((2.5 - 1.5) + (6.0 - 4.0))


def test_each_producer_draws_its_steps_as_the_single_order_draws_them():
    from rlvr.training.producer import StepDraws
    from rlvr.training.prompt_order import PromptOrder

    # 7 records: the draws wrap into new passes (fresh permutations) along the way
    single = PromptOrder(7, seed=3)
    single.next(5)  # the trainer's position at the start (a resume)
    start = single.state_dict()
    expected = {step: single.next(2) for step in range(4, 14)}  # P = 2, first step 4
    for count in (1, 2, 3):
        got = {}
        for index in range(count):
            order = PromptOrder(7, seed=3)
            order.load_state_dict(start)
            draws = StepDraws(order, first_step=4, index=index, count=count, per_step=2)
            while draws.step < 14:
                step, indices = draws.next()
                got[step] = indices
        assert got == expected, count


# -- a producer killed in the middle of a put ------------------------------------------


def _half_written_queue():
    """A process queue holding what a producer killed mid-put leaves: a message's
    length header promising 1 MiB, then a few bytes of it."""
    groups = multiprocessing.get_context("spawn").Queue()
    os.write(groups._writer.fileno(), struct.pack("!i", 1 << 20) + b"\x80\x04partial")
    return groups


def test_a_half_written_group_blocks_a_plain_get_for_good():
    # the hazard the relay exists for: the timeout does not bound a read once begun
    groups = _half_written_queue()
    reader = threading.Thread(target=lambda: groups.get(timeout=0.2), daemon=True)
    reader.start()
    reader.join(2.0)
    assert reader.is_alive()  # still reading the rest of the message, 10x its timeout on


def test_a_half_written_group_does_not_hold_the_wait_on_a_dead_producer():
    process = SimpleNamespace(pid=77, exitcode=-9, is_alive=lambda: False)
    side = ProducerSet([ProducerHandle(0, 1, 1, process, _half_written_queue(),
                                       queue.Queue())], per_step=1, timeout_s=600.0)
    raised: list[BaseException] = []

    def wait() -> None:
        try:
            side.receive(step=1)
        except BaseException as error:  # noqa: BLE001 - the test reads it
            raised.append(error)

    waiter = threading.Thread(target=wait, daemon=True)  # a hang fails, not blocks, the test
    waiter.start()
    waiter.join(10.0)
    assert not waiter.is_alive(), "the wait blocked on the half-written group"
    assert isinstance(raised[0], ProducerError)
    assert re.search(r"pid 77\) exited with status -9", str(raised[0]))
