"""Typed config: defaults < YAML < overrides, and errors that name the field."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import pytest

from rlvr.config import ConfigError, Named, describe_config, load_config, save_config


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


@dataclass
class Algo:
    loss: Named = field(default_factory=lambda: Named("ppo_clip"),
                        metadata={"help": "policy loss"})


def test_named_component_by_bare_name_or_mapping(tmp_path):
    assert load_config(Algo).loss == Named("ppo_clip")
    assert load_config(Algo, overrides=["loss=gspo"]).loss == Named("gspo")
    assert load_config(Algo, overrides=["loss={name: gspo, eps_low: 0.001}"]).loss == \
        Named("gspo", {"eps_low": 0.001})
    # an option alone refines the default component; after a bare name, that one
    assert load_config(Algo, overrides=["loss.eps_high=0.28"]).loss == \
        Named("ppo_clip", {"eps_high": 0.28})
    assert load_config(Algo, overrides=["loss=gspo", "loss.eps_high=0.1"]).loss == \
        Named("gspo", {"eps_high": 0.1})
    path = tmp_path / "c.yaml"
    path.write_text("loss:\n  name: gspo\n  eps_low: 0.002\n")
    cfg = load_config(Algo, path)
    assert cfg.loss == Named("gspo", {"eps_low": 0.002})
    save_config(cfg, tmp_path / "out.yaml")  # round-trips
    assert load_config(Algo, tmp_path / "out.yaml") == cfg
    save_config(load_config(Algo), tmp_path / "plain.yaml")
    assert "loss: ppo_clip" in (tmp_path / "plain.yaml").read_text()
    assert describe_config(Algo) == ["loss = 'ppo_clip'  # policy loss"]


@pytest.mark.parametrize("override,message", [
    ("loss=3", "expected a name or a mapping"),
    ("loss={name: 3}", "name: expected a string"),
])
def test_named_component_shape_errors(override, message):
    with pytest.raises(ConfigError, match=f"loss: {message}"):
        load_config(Algo, overrides=[override])
