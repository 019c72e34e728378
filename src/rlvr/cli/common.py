"""The frame every `rlvr` subcommand shares: its parser (the module docstring as the
description, laid out as written), the arguments of the commands run from a config
(train, sft, rm-train) and the config loading they share."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any


def command_parser(sub: Any, name: str, help_text: str, description: str | None,
                   *, reflow: bool = False) -> argparse.ArgumentParser:
    """The subparser of command `name`: `help_text` in `rlvr --help`, `description`
    (the module's docstring) in its own --help, as written unless `reflow`."""
    layout = {} if reflow else {"formatter_class": argparse.RawDescriptionHelpFormatter}
    return sub.add_parser(name, help=help_text, description=description, **layout)


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def config_command_parser(sub: Any, name: str, help_text: str,
                          description: str | None) -> argparse.ArgumentParser:
    """The subcommand `name` of a command run from a config (train, sft, rm-train): its
    module docstring as description and the common arguments."""
    p = command_parser(sub, name, help_text, description)
    add_config_arguments(p)
    return p


def add_config_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("overrides", nargs="*", metavar="key.sub=value",
                   help="config overrides, applied after --config")
    p.add_argument("--config", "-c", help="YAML config file")
    p.add_argument("--run-dir", help="run directory (default runs/NAME-TIMESTAMP)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p.add_argument("--log-every", type=positive_int, metavar="N",
                   help="when stderr is not a terminal, a progress line every N steps "
                   "(and the first and last); sets the config's log_every (default 5)")
    p.add_argument("--describe", action="store_true", help="list every config field and exit")


def with_log_every(args: argparse.Namespace) -> list[str]:
    """The overrides with --log-every as one more (log_every=N), so it is checked, saved in
    config.yaml, allowed on --resume and passed to torchrun's ranks like any override."""
    extra = [f"log_every={args.log_every}"] if getattr(args, "log_every", None) else []
    return list(args.overrides) + extra


def is_main_rank() -> bool:
    """Rank 0 under torchrun, or a single process: the one that reports."""
    return os.environ.get("RANK", "0") == "0"


def load_cli_config(args: argparse.Namespace) -> Any:
    """The config of --config and the overrides, with its profile's defaults; tells what
    the real-model profile set and warns about settings that ruin a run (stderr)."""
    from rlvr.config import load_config, read_config_data
    from rlvr.training.config import TrainConfig
    from rlvr.training.profile import applied_defaults, config_warnings

    cfg = load_config(TrainConfig, args.config, list(args.overrides))
    if not is_main_rank():  # under torchrun rank 0 tells
        return cfg
    if not args.quiet:
        applied = applied_defaults(read_config_data(args.config, list(args.overrides)))
        if applied:
            chosen = ", ".join(f"{name}={value}" for name, value in applied.items())
            print(f"real-model defaults (model.path is set; yours win): {chosen}",
                  file=sys.stderr)
    for warning in config_warnings(cfg):
        print(f"warning: {warning}", file=sys.stderr)
    return cfg


def describe(schema: Any) -> str:
    """--describe: every field with its choices, help, and real-model default."""
    from rlvr.config import describe_config
    from rlvr.training.profile import REAL_MODEL_DEFAULTS, REAL_MODEL_LORA_LR

    notes = {name: f"real model: {value!r}" for name, value in REAL_MODEL_DEFAULTS.items()}
    notes["optim.lr"] += f" ({REAL_MODEL_LORA_LR!r} with LoRA)"
    return "\n".join(describe_config(schema, notes=notes))
