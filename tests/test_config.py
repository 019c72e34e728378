"""Typed config: defaults < YAML < overrides, and errors that name the field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

from rlvr.config import ConfigError, describe_config, load_config, save_config


@dataclass
class Optim:
    lr: float = field(default=1e-5, metadata={"help": "peak learning rate"})
    schedule: Literal["constant", "cosine"] = "cosine"
    betas: tuple[float, ...] = (0.9, 0.999)

    def validate(self) -> None:
        if self.lr <= 0:
            raise ConfigError("must be > 0", "lr")


@dataclass
class Model:
    path: str | None = None
    layers: int = 2


@dataclass
class Train:
    name: str = "run"
    steps: int = 10
    bf16: bool = False
    stop: list[str] = field(default_factory=list)
    optim: Optim = field(default_factory=Optim)
    model: Model = field(default_factory=lambda: Model(layers=4))


def test_defaults():
    cfg = load_config(Train)
    assert cfg.optim.lr == 1e-5 and cfg.model.layers == 4 and cfg.stop == []


def test_yaml_then_overrides(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("steps: 5\noptim:\n  lr: 3.0e-4\nmodel:\n  path: /m\n")
    cfg = load_config(Train, path, ["optim.schedule=constant", "steps=7", "stop=[\"\\n\", END]",
                                    "optim.lr=1e-3"])
    assert cfg.steps == 7 and cfg.optim.lr == 1e-3 and cfg.optim.schedule == "constant"
    assert cfg.model.path == "/m"
    assert cfg.model.layers == 4  # the section's own default survives a partial YAML section
    assert cfg.stop == ["\n", "END"]


def test_round_trip(tmp_path):
    cfg = load_config(Train, overrides=["name=x", "optim.betas=[0.5, 0.6]"])
    save_config(cfg, tmp_path / "out.yaml")
    assert load_config(Train, tmp_path / "out.yaml") == cfg


@pytest.mark.parametrize("override,field_name,text", [
    ("optim.lrr=1", "optim.lrr", "unknown field"),
    ("steps=abc", "steps", "expected an integer"),
    ("steps=1.5", "steps", "expected an integer"),
    ("bf16=3", "bf16", "expected true or false"),
    ("optim.schedule=linear", "optim.schedule", "must be one of"),
    ("optim.lr=-1", "optim.lr", "must be > 0"),
    ("stop=abc", "stop", "expected a list"),
    ("steps.x=1", "steps", "expected an integer"),
    ("novalue", "", "key.sub=value"),
])
def test_errors_name_the_field(override, field_name, text):
    with pytest.raises(ConfigError) as info:
        load_config(Train, overrides=[override])
    assert text in str(info.value)
    assert info.value.field == field_name or field_name in str(info.value)


def test_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("steps: [1, 2\n")
    with pytest.raises(ConfigError, match="bad.yaml"):
        load_config(Train, bad)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("optim:\n  lr: fast\n")
    with pytest.raises(ConfigError, match=r"optim\.lr.*wrong\.yaml"):
        load_config(Train, wrong)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(Train, tmp_path / "missing.yaml")


def test_describe_lists_every_leaf_with_help():
    lines = describe_config(Train)
    assert any(line.startswith("optim.lr = 1e-05  # peak learning rate") for line in lines)
    assert sum(1 for line in lines if line.startswith("model.")) == 2
