"""The progress display (rlvr.runs.Progress, rlvr.evaluation.progress.Progress): which
steps print in a log, the numbers they carry, the tqdm bar on a terminal, messages
printed above the bar, quiet."""

from __future__ import annotations

import io
import os
import re
from types import SimpleNamespace

import pytest
from tqdm import tqdm

import rlvr.evaluation.progress as eval_progress_module
import rlvr.runs.progress as progress_module
from rlvr.evaluation.progress import Progress as EvalProgress
from rlvr.runs import Progress
from rlvr.runs.progress import duration


class Stream(io.StringIO):
    def __init__(self, tty: bool) -> None:
        super().__init__()
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def metrics(step: int, **extra) -> dict:
    """An RL step's metrics as rl_step makes them (a subset), with step time = step s."""
    return {"step": step, "reward/mean": 0.25 + step / 100, "accuracy": step / 50,
            "response_length/mean": 12.5, "kl": 0.001, "entropy": 0.5, "clip_frac": 0.0,
            "grad_norm": 1.5, "tokens_per_s": 850.0, "time/generate": 0.9,
            "time/verify": 0.1, "time/update": 0.25, "time/step": float(step),
            "time/train_seconds": step * (step + 1) / 2, **extra}


def lines_of(stream: Stream) -> list[str]:
    return stream.getvalue().splitlines()


def test_a_log_gets_the_first_every_nth_and_the_last_step():
    stream = Stream(tty=False)
    progress = Progress(23, stream=stream, log_every=5)
    for step in range(1, 24):
        progress.step(metrics(step))
    progress.close()
    steps = [int(re.match(r"step (\d+)/23 ", line).group(1)) for line in lines_of(stream)]
    assert steps == [1, 5, 10, 15, 20, 23]


def test_a_log_line_carries_the_step_numbers_pace_and_eta():
    stream = Stream(tty=False)
    progress = Progress(23, stream=stream, log_every=5)
    for step in range(1, 16):
        progress.step(metrics(step))
    line = lines_of(stream)[-1]
    # the mean of the last 10 step times (6..15 s) is 10.5 s; 8 steps left: 84 s
    assert line == ("step 15/23  reward 0.400  acc 0.300  len 12.5  kl 0.0010  ent 0.500  "
                    "clip 0.000  gnorm 1.50  10.50 s/step  ETA 1m24s  850 tok/s  gen 0.9s  "
                    "ver 0.1s  upd 0.2s")


def test_the_first_line_has_a_pace_from_its_own_step():
    stream = Stream(tty=False)
    Progress(23, stream=stream).step(metrics(1))
    assert "1.00 s/step  ETA 22s" in stream.getvalue()  # 22 steps left at 1 s each


def test_a_max_seconds_budget_caps_the_eta():
    progress = Progress(23, max_seconds=100.0, stream=Stream(tty=False))
    for step in range(1, 6):  # 3 s/step mean, 18 steps left: 54 s; the budget: 100 - 90
        progress.step(metrics(step, **{"time/step": 3.0, "time/train_seconds": 90.0}))
    assert progress.eta(metrics(5, **{"time/train_seconds": 90.0})) == 10.0
    assert progress.eta(metrics(5, **{"time/train_seconds": 20.0})) == 54.0
    assert progress.eta(metrics(5, **{"time/train_seconds": 150.0})) == 0.0


def test_the_latest_held_out_accuracy_shows_from_the_before_number_on():
    stream = Stream(tty=False)
    progress = Progress(10, stream=stream, log_every=5)
    progress.step(metrics(1))
    progress.held_out(0.125)  # as the "before" evaluation would (order aside)
    progress.step(metrics(5))
    for step in range(6, 11):  # step 7 evaluated; a failed (NaN) one keeps the last
        extra = {"eval/accuracy": 0.5} if step == 7 else {}
        extra = {"eval/accuracy": float("nan")} if step == 9 else extra
        progress.step(metrics(step, **extra))
    first, at_5, at_10 = lines_of(stream)
    assert "held-out" not in first
    assert "acc 0.100  held-out 0.125  len" in at_5
    assert "held-out 0.500" in at_10


def test_close_prints_the_last_step_when_the_run_stopped_between_lines():
    stream = Stream(tty=False)
    progress = Progress(23, stream=stream, log_every=5)
    for step in range(1, 8):  # max_seconds stopped it after step 7
        progress.step(metrics(step))
    progress.close()
    progress.close()
    assert [line.split()[1] for line in lines_of(stream)] == ["1/23", "5/23", "7/23"]


def test_a_resumed_run_prints_its_first_step():
    stream = Stream(tty=False)
    progress = Progress(30, stream=stream, log_every=5)
    for step in range(12, 16):
        progress.step(metrics(step))
    assert [line.split()[1] for line in lines_of(stream)] == ["12/30", "15/30"]


def test_messages_print_in_a_log_and_quiet_prints_nothing():
    stream = Stream(tty=False)
    progress = Progress(5, stream=stream)
    progress.message("supervised warm-start: 3 steps")
    assert lines_of(stream) == ["supervised warm-start: 3 steps"]
    for tty in (False, True):
        stream = Stream(tty=tty)
        quiet = Progress(5, quiet=True, stream=stream)
        quiet.message("hello")
        for step in range(1, 6):
            quiet.step(metrics(step))
        quiet.phase("sft", 3).step({"step": 1, "loss": 1.0})
        quiet.close()
        assert stream.getvalue() == "" and quiet.bar is None


def test_the_warm_start_phase_shows_its_loss_on_the_same_cadence():
    stream = Stream(tty=False)
    sft = Progress(100, stream=stream, log_every=7).phase("sft", 12)
    for step in range(1, 13):
        sft.step({"step": step, "loss": 2.0 / step, "time/step": 0.5})
    assert lines_of(stream) == ["sft 1/12  loss 2.0000  0.50 s/step  ETA 6s",
                                "sft 7/12  loss 0.2857  0.50 s/step  ETA 2s",
                                "sft 12/12  loss 0.1667  0.50 s/step  ETA 0s"]


class RecordingBar(tqdm):
    made: list["RecordingBar"] = []

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        RecordingBar.made.append(self)


@pytest.fixture
def recording_bar(monkeypatch):
    RecordingBar.made = []
    monkeypatch.setattr(progress_module, "tqdm", RecordingBar)
    monkeypatch.setattr(eval_progress_module, "tqdm", RecordingBar)
    yield RecordingBar.made
    for bar in RecordingBar.made:  # an open bar would shift the next test's one down a row
        bar.close()


def test_a_terminal_gets_one_tqdm_bar_and_no_lines(recording_bar):
    stream = Stream(tty=True)
    progress = Progress(23, stream=stream, log_every=5)
    for step in range(1, 24):
        progress.step(metrics(step))
    bar = progress.bar
    assert recording_bar == [bar] and bar.total == 23 and bar.n == 23
    assert "18.50 s/step" in bar.bar_format  # the mean of steps 14..23's times
    progress.close()
    assert progress.bar is None and bar.n == 23
    out = stream.getvalue()
    assert "\r" in out and "step 23/23" in out and "reward 0.480" in out
    assert "ETA 0s" in out  # the last step's
    assert "gnorm" not in out  # the bar keeps to the headline numbers


def test_a_resumed_run_s_bar_starts_at_its_first_step(recording_bar):
    stream = Stream(tty=True)
    progress = Progress(30, stream=stream)
    progress.step(metrics(11))
    progress.step(metrics(12))
    assert recording_bar == [progress.bar] and progress.bar.n == 12
    progress.close()  # draws the last state (tqdm skips redraws within 0.1 s)
    drawn = re.findall(r"step (\d+)/30", stream.getvalue())
    assert drawn[0] == "11" and drawn[-1] == "12"


def test_messages_print_whole_above_the_bar(recording_bar):
    stream = Stream(tty=True)
    progress = Progress(10, stream=stream)
    progress.step(metrics(1))
    progress.message("warning: step 1: 3 attempts copy the prompt")
    progress.step(metrics(2))
    progress.close()
    out = stream.getvalue()
    # the message is a line of its own (the bar was cleared before it, redrawn after)
    assert "warning: step 1: 3 attempts copy the prompt" in re.split(r"[\r\n]", out)
    after = out.split("copy the prompt\n", 1)[1]
    assert "step 1/10" in after or "step 2/10" in after


def test_force_draws_the_bar_on_any_stream(recording_bar):
    stream = Stream(tty=False)
    progress = Progress(3, stream=stream, force=True)
    progress.step(metrics(1))
    assert progress.live and len(recording_bar) == 1


def test_a_terminal_without_a_size_still_gets_a_bar(monkeypatch):
    # a pty of 0 x 0 (`script`, some CI runners): tqdm would hide a bar it sized from it
    monkeypatch.setattr(progress_module.os, "get_terminal_size",
                        lambda fd: os.terminal_size((0, 0)))
    stream = Stream(tty=True)
    stream.fileno = lambda: 2
    assert progress_module.bar_width(stream) == {"ncols": 100, "nrows": 20}
    progress = Progress(3, stream=stream)
    progress.step(metrics(1))
    progress.close()
    assert "step 1/3 |" in stream.getvalue()
    monkeypatch.setattr(progress_module.os, "get_terminal_size",
                        lambda fd: os.terminal_size((80, 24)))
    assert progress_module.bar_width(stream) == {"dynamic_ncols": True}


@pytest.mark.parametrize("seconds, text", [(0.4, "0s"), (42, "42s"), (185, "3m05s"),
                                           (3720, "1h02m")])
def test_duration(seconds, text):
    assert duration(seconds) == text


def attempts(passed: int, failed: int) -> list:
    return ([SimpleNamespace(verdict=SimpleNamespace(passed=True))] * passed
            + [SimpleNamespace(verdict=SimpleNamespace(passed=False))] * failed)


def test_an_evaluation_in_a_log_writes_a_start_and_an_end_line():
    stream = Stream(tty=False)
    progress = EvalProgress(label="held-out", stream=stream, interval_s=3600)
    progress.start(200, greedy=True, n=0)
    for _ in range(4):
        progress.generated("greedy", 50)
        progress.graded(attempts(10, 40))
    progress.finish()
    start, end = lines_of(stream)
    assert start == "held-out: 200 prompt passes (greedy)"
    assert end.startswith("held-out [done] 200/200 prompt passes, 40/200 passed, ")


def test_an_evaluation_in_a_log_writes_lines_between_at_its_interval():
    stream = Stream(tty=False)
    progress = EvalProgress(stream=stream, interval_s=0.0)
    progress.start(10, greedy=True, n=4)
    progress.generated("greedy", 10)
    progress.graded(attempts(3, 7))
    line = lines_of(stream)[1]
    assert line.startswith("eval [greedy] 10/20 prompt passes, grading..., ")
    assert ", ETA " in line
    assert progress.line("sample").startswith("eval [sample] 10/20 prompt passes, 3/10 passed")


def test_an_evaluation_on_a_terminal_is_a_tqdm_bar(recording_bar):
    stream = Stream(tty=True)
    progress = EvalProgress(label="eval gsm8k", stream=stream)
    progress.start(20, greedy=True, n=0)
    progress.generated("greedy", 8)
    progress.graded(attempts(5, 3))
    progress.generated("greedy", 12)
    bar = progress.bar
    assert recording_bar == [bar] and bar.total == 20 and bar.n == 20
    progress.finish()
    assert progress.bar is None
    out = stream.getvalue()
    assert "\r" in out and "20/20" in out and "5/8 passed" in out
    assert "prompt passes" not in out  # no plain lines


def test_a_silent_evaluation_writes_nothing(recording_bar, capsys):
    progress = EvalProgress.silent()
    progress.start(5, greedy=True, n=0)
    progress.generated("greedy", 5)
    progress.finish()
    assert recording_bar == [] and capsys.readouterr().err == ""


def test_a_long_warm_start_prints_about_ten_lines_in_a_log():
    # 600 warm-start steps at log_every 5 would be 121 lines; the phase prints every 60
    stream = Stream(tty=False)
    sft = Progress(100, stream=stream, log_every=5).phase("sft", 600)
    for step in range(1, 601):
        sft.step({"step": step, "loss": 1.0, "time/step": 0.1})
    assert [line.split()[1] for line in lines_of(stream)] == \
        ["1/600"] + [f"{k}/600" for k in range(60, 601, 60)]
