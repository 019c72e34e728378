"""`rlvr train` refuses bad configs and bad data before training, naming the field or
the file and line."""

from __future__ import annotations

import pytest

from cli_helpers import run_cli
from rlvr.algorithms import ADVANTAGES, GSPO, POLICY_LOSSES, ConstantNormalizer, PPOClip
from rlvr.cli.main import main
from rlvr.config import ConfigError, load_config
from rlvr.training.algorithm import build_algorithm
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
    ("algorithm.policy_loss=ppo", "algorithm.policy_loss"),
    ("algorithm.policy_loss.clip=0.2", "algorithm.policy_loss"),
    ("algorithm.policy_loss={name: gspo, eps_low: 2}", "algorithm.policy_loss"),
    ("algorithm.policy_loss.eps_high=wide", "algorithm.policy_loss"),
    ("algorithm.advantage={name: grpo, std: 1}", "algorithm.advantage"),
    ("algorithm.aggregation=mean", "algorithm.aggregation"),
    ("algorithm.kl_estimator=k4", "algorithm.kl_estimator"),
    ("algorithm.micro_batch_rows=-1", "algorithm.micro_batch_rows"),
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


def test_misspelled_estimator_exits_2_on_load_naming_field_and_known_names(tmp_path):
    """Through the CLI as a user runs it: refused while the config loads, before the
    run directory, the model, the warm-start or the "before" evaluation exist."""
    result = run_cli("train", "--run-dir", str(tmp_path / "r"), "algorithm.advantage=grpoo")
    assert result.returncode == 2
    assert "config error: algorithm.advantage: unknown advantage estimator 'grpoo'" \
        in result.stderr
    assert f"known: {', '.join(sorted(ADVANTAGES))}" in result.stderr
    assert not (tmp_path / "r").exists()
    assert "warm-start" not in result.stdout + result.stderr
    assert "accuracy" not in result.stdout + result.stderr


def test_misspelled_loss_names_the_known_losses(capsys, tmp_path):
    code, err = run(capsys, "--run-dir", str(tmp_path / "r"), "algorithm.policy_loss=gpso")
    assert code == 2
    assert f"unknown policy loss 'gpso'; known: {', '.join(sorted(POLICY_LOSSES))}" in err


def _algorithm(*overrides):
    cfg = load_config(TrainConfig, overrides=list(overrides))
    return build_algorithm(cfg.algorithm, cfg.sampling.max_new_tokens)


def test_each_component_gets_its_own_options_and_defaults():
    # a bare name: that loss with its own defaults (GSPO's clip range is 3e-4 / 4e-4)
    assert _algorithm("algorithm.policy_loss=gspo").policy_loss == GSPO()
    assert _algorithm("algorithm.policy_loss=gspo").policy_loss.eps_low == 3e-4
    assert _algorithm("algorithm.policy_loss={name: gspo, eps_low: 1e-3}").policy_loss == \
        GSPO(eps_low=1e-3, eps_high=4e-4)
    assert _algorithm().policy_loss == PPOClip()
    assert _algorithm("algorithm.policy_loss.eps_high=0.28").policy_loss == \
        PPOClip(eps_high=0.28)
    assert _algorithm("algorithm.advantage={name: grpo, eps: 0.1}").advantage.eps == 0.1
    # the constant normaliser's length: the generation limit unless given
    assert _algorithm("algorithm.aggregation=constant", "sampling.max_new_tokens=40"
                      ).aggregate == ConstantNormalizer(max_length=40)
    assert _algorithm("algorithm.aggregation={name: constant, max_length: 99}"
                      ).aggregate == ConstantNormalizer(max_length=99)


def test_help_lists_every_registered_name():
    from rlvr.algorithms import AGGREGATIONS, KL_ESTIMATORS, ROLLOUT_CORRECTIONS
    from rlvr.config import describe_config

    lines = {line.split(" = ")[0]: line for line in describe_config(TrainConfig)}
    for field, names in (("advantage", ADVANTAGES), ("policy_loss", POLICY_LOSSES),
                         ("aggregation", AGGREGATIONS), ("kl_estimator", KL_ESTIMATORS),
                         ("rollout_correction", ROLLOUT_CORRECTIONS)):
        assert all(name in lines[f"algorithm.{field}"] for name in names), field


def test_an_old_config_with_flat_clip_fields_still_loads(tmp_path):
    """Run directories written before losses took their own options (issue 16) saved
    algorithm.eps_low/eps_high/dual_clip; they load as the loss's options, so those
    runs still resume with the clip they trained with."""
    from rlvr.config import load_config

    old = tmp_path / "config.yaml"
    old.write_text("algorithm:\n  policy_loss: ppo_clip\n  eps_low: 0.2\n  eps_high: 0.28\n"
                   "  dual_clip: null\n")
    cfg = load_config(TrainConfig, old)
    assert cfg.algorithm.policy_loss.name == "ppo_clip"
    assert dict(cfg.algorithm.policy_loss.options) == {"eps_low": 0.2, "eps_high": 0.28}
