"""Progress as `rlvr train` and `rlvr sft` print it when stderr is not a terminal (a log
file, CI, nohup): which steps get a line, --log-every (saved, changeable on resume),
--quiet."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
import yaml

from cli_helpers import SRC
from rlvr.cli.main import main
from rlvr.config import ConfigError, load_config
from rlvr.training.config import TrainConfig
from rlvr.training.resume import check_resumable, resume_config
from train_helpers import TINY_OVERRIDES

RL_LINE = re.compile(r"^step (\d+)/(\d+)  reward \d\.\d{3}  acc \d\.\d{3}  held-out \d\.\d{3}.*"
                     r" s/step  ETA \S+  \d+ tok/s  gen [\d.]+s  ver [\d.]+s  upd [\d.]+s$")


def steps_printed(text: str, pattern: re.Pattern = RL_LINE) -> list[int]:
    return [int(m.group(1)) for line in text.splitlines() if (m := pattern.match(line))]


def test_train_to_a_file_writes_a_progress_line_at_least_every_10_steps(tmp_path):
    """`rlvr train` (the demo, shrunk) with stdout and stderr sent to a file."""
    log = tmp_path / "train.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    with open(log, "w") as out:
        code = subprocess.run([sys.executable, "-m", "rlvr", "train", "--run-dir",
                               str(tmp_path / "run"), "steps=23", "checkpoint_every=0",
                               "eval.every=10", *TINY_OVERRIDES],
                              stdout=out, stderr=subprocess.STDOUT, env=env,
                              timeout=240).returncode
    text = log.read_text()
    assert code == 0, text
    steps = steps_printed(text)
    assert steps == [1, 5, 10, 15, 20, 23]  # the default log_every=5, first and last
    assert all(any(s in steps for s in range(w, w + 10)) for w in range(1, 24, 10))
    assert "\r" not in text and "\x1b" not in text  # no bar in a file
    lines = text.splitlines()
    sft = [line.split()[1] for line in lines if line.startswith("sft ") and "  loss " in line]
    assert sft == ["1/3", "3/3"]  # the warm-start keeps the same rule
    # each held-out evaluation (before, at steps 10 and 20, after) has a start and an end
    assert sum(line == "held-out: 6 prompt passes (greedy)" for line in lines) == 4
    assert sum(line.startswith("held-out [done] 6/6 prompt passes") for line in lines) == 4
    said = [i for i, line in enumerate(lines) if line.startswith("held-out accuracy at step")]
    assert [lines[i + 1].split()[1] for i in said] == ["10/23", "20/23"]  # then its step


def test_log_every_is_saved_and_a_resume_may_change_it(tmp_path, capsys):
    run = tmp_path / "run"
    assert main(["train", "--run-dir", str(run), "--log-every", "3", "steps=7",
                 "checkpoint_every=0", "data.eval_size=0", *TINY_OVERRIDES]) == 0
    err = capsys.readouterr().err
    assert steps_printed(err, re.compile(r"^step (\d+)/7  ")) == [1, 3, 6, 7]
    assert yaml.safe_load((run / "config.yaml").read_text())["log_every"] == 3
    assert main(["train", "--resume", str(run), "--log-every", "4", "steps=13"]) == 0
    err = capsys.readouterr().err
    assert steps_printed(err, re.compile(r"^step (\d+)/13  ")) == [8, 12, 13]
    assert yaml.safe_load((run / "config.yaml").read_text())["log_every"] == 4


def test_sft_prints_its_steps_by_log_every(tmp_path, capsys):
    assert main(["sft", "--run-dir", str(tmp_path / "sft"), "--log-every", "2",
                 *TINY_OVERRIDES, "sft.steps=5"]) == 0
    err = capsys.readouterr().err
    assert steps_printed(err, re.compile(r"^sft (\d+)/5  loss \d+\.\d{4}  [\d.]+ s/step  "
                                         r"ETA \S+$")) == [1, 2, 4, 5]


def test_quiet_prints_no_progress(tmp_path, capsys):
    assert main(["train", "--quiet", "--run-dir", str(tmp_path / "run"), "steps=2",
                 "checkpoint_every=0", *TINY_OVERRIDES]) == 0
    err = capsys.readouterr().err
    assert err == "", err


def test_log_every_becomes_an_override_the_ranks_get_too():
    from rlvr.cli.main import build_parser
    from rlvr.cli.train import torchrun_arguments, with_log_every

    args = build_parser(only="train").parse_args(["train", "--log-every", "3", "--run-dir",
                                                  "r", "--nproc", "2", "steps=9"])
    args.overrides = with_log_every(args)  # as `rlvr train` does first
    assert args.overrides == ["steps=9", "log_every=3"]
    assert torchrun_arguments(args, None) == ["--run-dir", "r", "steps=9", "log_every=3"]
    args = build_parser(only="train").parse_args(["train", "steps=9"])
    assert with_log_every(args) == ["steps=9"]  # the config's (default 5) stands


def test_log_every_must_be_at_least_1():
    with pytest.raises(ConfigError, match="log_every"):
        load_config(TrainConfig, overrides=["log_every=0"])
    with pytest.raises(SystemExit):
        main(["train", "--log-every", "0"])


def test_log_every_may_change_on_resume(tmp_path):
    saved = load_config(TrainConfig, overrides=["log_every=5"])
    check_resumable(saved, load_config(TrainConfig, overrides=["log_every=50"]))
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"log_every": 5}))
    assert resume_config(tmp_path, ["log_every=2"]).log_every == 2
