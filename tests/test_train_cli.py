"""`rlvr train` and `rlvr` as a user meets them: --version, --describe, which failures
exit 2 (bad input) and which surface with a traceback (bugs), what a run prints."""

from __future__ import annotations

import re

import pytest

import rlvr
import rlvr.training.run as run_module
from rlvr.cli.main import main
from rlvr.config import ConfigError
from cli_helpers import run_cli
from train_helpers import TINY_OVERRIDES


def test_version_prints_the_package_version_and_exits_0():
    result = run_cli("--version", timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"rlvr {rlvr.__version__}"
    assert re.fullmatch(r"\d+\.\d+\.\d+\S*", rlvr.__version__)


def test_describe_gives_choices_and_help_for_every_field(capsys):
    assert main(["train", "--describe"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert all("  # " in line for line in lines), [l for l in lines if "  # " not in l]
    by_name = {line.split(" = ")[0]: line for line in lines}
    for name in ("prompt", "reference", "verifier", "id", "prompt_template",
                 "reference_transform", "metadata"):
        assert f"data.mapping.{name}" in by_name
    assert "gsm8k | integer | str" in by_name["data.mapping.reference_transform"]
    assert "one of plain | chat | auto." in by_name["prompt.style"]
    assert "one of k1 | k2 | k3." in by_name["algorithm.kl_estimator"]
    # the real-model profile's defaults are shown beside the demo's
    assert by_name["sft.steps"].startswith("sft.steps = 1000  #")
    assert "[real model: 0]" in by_name["sft.steps"]
    assert "[real model: 1e-06 (2e-05 with LoRA)]" in by_name["optim.lr"]


def _failing_train(error):
    def train(*args, **kwargs):
        raise error
    return train


def test_an_error_inside_training_keeps_its_traceback(monkeypatch, tmp_path):
    # A ValueError from deep inside training is a bug, not a config error: it must not be
    # turned into "exit 2" with the traceback thrown away.
    monkeypatch.setattr(run_module, "train", _failing_train(ValueError("shape mismatch")))
    with pytest.raises(ValueError, match="shape mismatch"):
        main(["train", "--quiet", "--run-dir", str(tmp_path / "r"), *TINY_OVERRIDES])


def test_a_config_error_found_during_set_up_exits_2(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(run_module, "train",
                        _failing_train(ConfigError("needs a template", "prompt.style")))
    assert main(["train", "--quiet", "--run-dir", str(tmp_path / "r"), *TINY_OVERRIDES]) == 2
    assert "prompt.style: needs a template" in capsys.readouterr().err


def test_a_missing_model_exits_2_naming_the_field_before_any_work(tmp_path, capsys):
    code = main(["train", "--run-dir", str(tmp_path / "r"),
                 f"model.path={tmp_path / 'no-such-model'}"])
    err = capsys.readouterr().err
    assert code == 2 and "model.path:" in err and "not found" in err
    assert not (tmp_path / "r").exists()


def test_real_model_profile_is_announced_and_a_ruinous_lr_warned(tmp_path, capsys):
    main(["train", "--run-dir", str(tmp_path / "r"), f"model.path={tmp_path / 'm'}",
          "optim.lr=5e-4", "sampling.max_new_tokens=64"])
    err = capsys.readouterr().err
    announced = next(line for line in err.splitlines() if line.startswith("real-model"))
    assert "sft.steps=0" in announced and "prompt.style=auto" in announced
    # the user's own settings are not listed as profile defaults
    assert "optim.lr" not in announced and "max_new_tokens" not in announced
    assert "warning: optim.lr=0.0005" in err


def test_held_out_accuracy_before_rl_is_printed_once(tmp_path, capsys):
    code = main(["train", "--run-dir", str(tmp_path / "r"), "steps=1", "checkpoint_every=0",
                 *TINY_OVERRIDES])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    both = captured.out + captured.err
    assert both.count("held-out accuracy before RL") == 1
    # the result line on stdout carries both numbers, as summary.json has them
    result = re.search(r"held-out accuracy: (\d\.\d{3}) -> (\d\.\d{3})", captured.out)
    assert result is not None
