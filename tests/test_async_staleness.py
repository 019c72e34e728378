"""Asynchronous rollouts without a producer process: the `rollout` config section and
its refusals, the staleness filter on a hand-made stream of groups, the staleness
metrics, and the trainer's wait for a producer that sends nothing (rlvr.training.
staleness, rlvr.training.async_rollouts)."""

from __future__ import annotations

import queue
import re
from types import SimpleNamespace

import pytest

from rlvr.config import ConfigError
from rlvr.errors import ExternalFault
from rlvr.training.async_rollouts import AsyncRollouts, ProducerError
from rlvr.training.config import check_distributed
from rlvr.training.staleness import (OrderMismatch, SampledGroup, staleness_metrics,
                                     take_step_groups)
from train_helpers import tiny_config


@pytest.mark.parametrize("override, field", [
    ("rollout.max_staleness=-1", "rollout.max_staleness"),
    ("rollout.producer_timeout_s=0", "rollout.producer_timeout_s"),
    ("rollout.producer_threads=0", "rollout.producer_threads"),
])
def test_bad_values_name_their_field(override, field):
    with pytest.raises(ConfigError, match=re.escape(field)):
        tiny_config(override)


@pytest.mark.parametrize("override, field", [
    ("algorithm.dynamic_sampling=true", "algorithm.dynamic_sampling"),
    ("episodes.max_turns=2", "episodes.max_turns"),
    ("update.path=replay", "update.path"),
    ("model.device=cuda", "model.device"),
    ("algorithm.recompute_old_logprobs=false", "algorithm.recompute_old_logprobs"),
])
def test_unsupported_combinations_are_refused_at_load(override, field):
    tiny_config(override)  # fine synchronously
    with pytest.raises(ConfigError, match=re.escape(field) + ".*max_staleness=2"):
        tiny_config("rollout.max_staleness=2", override)


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


def _waiting_trainer(alive: bool, timeout_s: float, exitcode=None) -> AsyncRollouts:
    """AsyncRollouts' waiting half on an empty queue and a stand-in process."""
    side = object.__new__(AsyncRollouts)
    side.cfg = tiny_config(f"rollout.producer_timeout_s={timeout_s}")
    side.groups, side.errors = queue.Queue(), queue.Queue()
    side.process = SimpleNamespace(pid=4242, exitcode=exitcode, is_alive=lambda: alive)
    return side


def test_an_empty_queue_times_out_naming_the_producer_and_the_wait():
    with pytest.raises(ProducerError) as caught:
        _waiting_trainer(alive=True, timeout_s=0.3)._receive(step=3)
    assert isinstance(caught.value, ExternalFault)  # exit 3 with the resume command
    text = str(caught.value)
    assert "producer (pid 4242)" in text and "step 3" in text
    waited = float(re.search(r"waited ([0-9.]+) s", text).group(1))
    assert waited >= 0.3 and "producer_timeout_s=0.3" in text


def test_a_dead_producer_is_reported_with_its_status():
    with pytest.raises(ProducerError, match=r"pid 4242\) exited with status -9"):
        _waiting_trainer(alive=False, timeout_s=60, exitcode=-9)._receive(step=2)


def test_a_failed_producer_passes_its_traceback_on():
    side = _waiting_trainer(alive=True, timeout_s=60)
    side.errors.put("Traceback ...\nValueError: boom\n")
    with pytest.raises(ProducerError, match="(?s)pid 4242\\) failed.*ValueError: boom"):
        side._receive(step=2)


def test_a_producer_killed_holding_the_weights_lock_does_not_hang_the_publish():
    import threading

    side = _waiting_trainer(alive=False, timeout_s=60, exitcode=-9)
    side.lock = threading.Lock()
    side.lock.acquire()  # as a producer SIGKILLed while it loaded weights leaves it
    with pytest.raises(ProducerError, match=r"pid 4242\) exited with status -9 while loading"):
        side.publish(model=None)
