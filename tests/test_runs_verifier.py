"""run_verifier: the one answer to "which verifier graded this run" (trainer, audit, view)."""

from __future__ import annotations

import pytest
import yaml

from rlvr.audit.rundata import RunDataError, load_run
from rlvr.runs.verifier import RunConfigError, run_verifier
from rlvr.training.config import TrainConfig
from rlvr.view.runinfo import ViewRun

CASES = [
    ({"reward": {"verifier": "math"}, "data": {"default_verifier": "exact"}}, "math"),
    # a composite grades under the one name reward.verifier gives it
    ({"reward": {"verifier": "composite", "options": {"components": ["math", "ifeval"]}},
      "data": {"default_verifier": "exact"}}, "composite"),
    # no reward.verifier: file rows without one (and the arithmetic task) use the default
    ({"reward": {"verifier": ""}, "data": {"default_verifier": "exact"}}, "exact"),
    ({"reward": {}, "data": {"default_verifier": "math"}}, "math"),
    # eval.verifier grades the held-out set only, not the logged attempts
    ({"reward": {"verifier": ""}, "eval": {"verifier": "math"},
      "data": {"default_verifier": "exact"}}, "exact"),
    ({"reward": None, "data": None}, ""),
    ({}, ""),
    (["not", "a", "mapping"], ""),
]


@pytest.mark.parametrize("config,expected", CASES)
def test_from_a_mapping_and_from_a_run_directory(tmp_path, config, expected):
    assert run_verifier(config) == expected
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    (tmp_path / "rollouts.jsonl").write_text("", encoding="utf-8")
    assert run_verifier(tmp_path) == expected
    assert ViewRun.open(tmp_path).verifier() == expected
    assert load_run(tmp_path).verifier == expected


def test_from_the_typed_training_config():
    cfg = TrainConfig()
    cfg.reward.verifier, cfg.data.default_verifier = "", "exact"
    assert run_verifier(cfg) == "exact"
    cfg.reward.verifier = "math"
    assert run_verifier(cfg) == "math"


def test_no_config_and_a_broken_one(tmp_path):
    assert run_verifier(tmp_path) == ""
    (tmp_path / "config.yaml").write_text("reward: [unclosed\n", encoding="utf-8")
    (tmp_path / "rollouts.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(RunConfigError, match=r"config\.yaml: malformed YAML"):
        run_verifier(tmp_path)
    with pytest.raises(RunDataError, match=r"config\.yaml: malformed YAML"):
        load_run(tmp_path)
    assert ViewRun.open(tmp_path).verifier() == ""  # the viewer shows the run anyway
