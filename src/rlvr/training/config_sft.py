"""The trainer config's `sft` section: the supervised warm-start before RL
(rlvr.training.sft). Part of TrainConfig (rlvr.training.config, which re-exports it), in
its own module to keep that file readable."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rlvr.training.config_fields import _doc


@dataclass
class SFTConfig:
    steps: int = _doc("supervised warm-start steps before RL (0 = none)", default=1000)
    batch_size: int = _doc("worked examples per step", default=64)
    lr: float = _doc("peak learning rate", default=3e-3)
    warmup_steps: int = _doc("steps of linear warmup", default=20)
    worked_solutions: bool = _doc("teach column-addition worked solutions for the "
                                  "arithmetic task's + problems (else target_template)",
                                  default=True)
    forget_carry: float = _doc("chance the worked solutions drop each carry (a sloppy "
                               "demonstrator that RL has to correct)", default=0.7)
    target_template: str = _doc("completion taught for other records; fields {reference} "
                                "and the record's metadata", default="#### {reference}")
    seed_offset: int = _doc("added to the run seed for the SFT example order", default=1)
    prompt: Literal["task", "episode"] = _doc(
        "what each example's completion follows: task (the record's prompt as a one-turn "
        "run renders it) or episode (the first prompt of an episode in the run's "
        "environment: its tool list and note included, so a first-turn tool call is "
        "taught where it will be used)", default="task")
    followup_template: str = _doc(
        "with prompt: episode, also teach the second turn: the taught first turn goes to "
        "the environment (a tool call runs) and this follows its reply; fields as "
        "target_template (\"\" = the first turn only)", default="")
