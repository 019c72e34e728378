"""Resume's log truncation streams the logs and never drops a line silently."""

from __future__ import annotations

import json
import tracemalloc

import pytest

from rlvr.errors import UserError
from rlvr.runs import RunDir, RunLogError


def _lines(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode("utf-8")


def test_a_corrupt_middle_line_stops_the_resume_naming_it(tmp_path):
    run = RunDir(tmp_path / "run").create()
    before = _lines([{"step": 1}, {"step": 2}]) + b'{"step": 2, "comp\n' + _lines([{"step": 3}])
    run.rollouts.write_bytes(before)
    with pytest.raises(RunLogError) as caught:
        run.truncate_logs_after(2)
    message = str(caught.value)
    assert f"{run.rollouts}:3: malformed JSON" in message
    assert "repair or delete line 3" in message and "resume again" in message
    assert isinstance(caught.value, UserError)
    assert run.rollouts.read_bytes() == before  # left untouched
    assert [p.name for p in run.path.iterdir() if p.name.endswith(".tmp")] == []


def test_a_torn_last_line_is_dropped_and_later_steps_too(tmp_path):
    run = RunDir(tmp_path / "run").create()
    kept = [{"step": 1, "x": "a\u2028b"}, {"step": 2}, {"note": "no step counts as 0"}]
    run.metrics.write_bytes(_lines(kept + [{"step": 3}]) + b'{"step": 4, "cu')
    run.rollouts.write_bytes(_lines(kept) + b'{"step": 3, "cu')
    run.truncate_logs_after(2)
    assert run.metrics.read_bytes() == _lines(kept)
    assert run.rollouts.read_bytes() == _lines(kept)
    assert run.read_metrics() == kept


def test_an_unterminated_complete_last_line_gets_its_newline(tmp_path):
    """Otherwise the next appended line would be glued onto it."""
    run = RunDir(tmp_path / "run").create()
    run.metrics.write_bytes(_lines([{"step": 1}]) + b'{"step": 2}')
    run.truncate_logs_after(5)
    run.append_metrics({"step": 3})
    assert [r["step"] for r in run.read_metrics()] == [1, 2, 3]


def test_nothing_to_drop_leaves_the_file_alone(tmp_path):
    run = RunDir(tmp_path / "run").create()
    run.metrics.write_bytes(_lines([{"step": 1}, {"step": 2}]))
    inode = run.metrics.stat().st_ino
    run.truncate_logs_after(2)
    assert run.metrics.stat().st_ino == inode


def test_a_large_log_is_truncated_with_bounded_memory(tmp_path):
    run = RunDir(tmp_path / "run").create()
    filler = "x" * 1000
    steps, per_step = 50, 1000  # ~50 MB
    with run.rollouts.open("wb") as out:
        for step in range(1, steps + 1):
            out.write(_lines({"step": step, "i": i, "completion": filler}
                             for i in range(per_step)))
    size = run.rollouts.stat().st_size
    assert size > 45_000_000
    tracemalloc.start()
    try:
        run.truncate_logs_after(20)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1_000_000, peak  # a line at a time, not the file (~50 MB)
    count, last = 0, None
    with run.rollouts.open("rb") as handle:
        for line in handle:
            count, last = count + 1, json.loads(line)
    assert count == 20 * per_step and last == {"step": 20, "i": per_step - 1,
                                               "completion": filler}


def test_rlvr_train_resume_stops_at_a_corrupt_middle_line(tmp_path, capsys, monkeypatch):
    """End to end: `rlvr train --resume` exits 2 naming the damaged line before it loads
    the model, and the run's rollouts.jsonl is byte for byte what it was."""
    import rlvr.training.run as run_module
    from rlvr.cli.main import main
    from rlvr.training.run import train
    from train_helpers import tiny_config

    run_dir = tmp_path / "run"
    train(tiny_config("steps=2", "checkpoint_every=1"), run_dir)
    rollouts = run_dir / "rollouts.jsonl"
    lines = rollouts.read_bytes().split(b"\n")
    lines[1] = lines[1][: len(lines[1]) // 2]  # damage line 2 of several
    rollouts.write_bytes(b"\n".join(lines))
    before = rollouts.read_bytes()

    def no_model(*args, **kwargs):
        raise AssertionError("the model loaded before the logs were checked")

    monkeypatch.setattr(run_module, "load_policy", no_model)
    assert main(["train", "--resume", str(run_dir), "steps=3", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{rollouts}:2: malformed JSON" in err and "repair or delete line 2" in err
    assert rollouts.read_bytes() == before
