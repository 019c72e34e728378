"""`rlvr train` refuses bad configs and bad data before training, naming the field or
the file and line."""

from __future__ import annotations

import pytest

from rlvr.cli.main import main
from rlvr.config import ConfigError, load_config
from rlvr.training.config import TrainConfig


def run(capsys, *argv):
    code = main(["train", *argv])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("override,named", [
    ("sampling.nope=1", "sampling.nope"),
    ("steps=many", "steps"),
    ("sampling.temperature=0", "sampling.temperature"),
    ("sampling.group_size=1", "sampling.group_size"),
    ("algorithm.kl_in=both", "algorithm.kl_in"),
    ("algorithm.kl_beta=-1", "algorithm.kl_beta"),
    ("sampling.activation_memory_gb=-1", "sampling.activation_memory_gb"),
])
def test_bad_override_names_the_field(capsys, tmp_path, override, named):
    code, err = run(capsys, "--run-dir", str(tmp_path / "r"), override)
    assert code == 2
    assert f"config error: {named}:" in err
    assert not (tmp_path / "r").exists()  # nothing started


def test_bad_yaml_field_names_the_file(capsys, tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("sampling:\n  group_size: 8\n  temprature: 0.7\n")
    code, err = run(capsys, "--config", str(config), "--run-dir", str(tmp_path / "r"))
    assert code == 2
    assert "sampling.temprature" in err and str(config) in err


def test_minibatches_must_divide_the_batch():
    with pytest.raises(ConfigError, match="algorithm.minibatches"):
        load_config(TrainConfig, overrides=["sampling.prompts_per_step=10",
                                            "algorithm.minibatches=3"])


def test_bad_data_row_fails_at_load_time_with_file_and_line(capsys, tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text('{"prompt": "1+1=", "reference": "2"}\n{"prompt": "2+2="}\n')
    code, err = run(capsys, "--run-dir", str(tmp_path / "r"), f"data.path={data}",
                    "sft.steps=0", "steps=1", "model.tiny.num_layers=1")
    assert code == 2
    assert f"{data}:2" in err and "reference" in err
    assert not (tmp_path / "r").exists()


def test_resume_of_a_directory_that_is_not_a_run(capsys, tmp_path):
    code, err = run(capsys, "--resume", str(tmp_path))
    assert code == 2 and "not a run directory" in err


def test_resume_refuses_config_and_run_dir(capsys, tmp_path):
    code, err = run(capsys, "--resume", str(tmp_path), "--config", "x.yaml")
    assert code == 2 and "drop --config and --run-dir" in err


def test_describe_lists_every_field_with_help(capsys):
    assert main(["train", "--describe"]) == 0
    out = capsys.readouterr().out
    assert "algorithm.kl_beta = 0.0  # " in out and "sampling.group_size" in out
