"""`rlvr train`: RLVR training. With no arguments, the embedded demo: a tiny Llama with a
character tokenizer, a short supervised warm-start on (sloppy) worked examples of
2-digit addition, held-out accuracy, RL with the "exact" verifier, accuracy again.
Once model.path names a real model, the real-model profile sets the defaults you leave
unset: no warm-start, chat prompts, auto device, every core, lr 1e-6, 512 new tokens.

    rlvr train                                       # the embedded demo (a few minutes)
    rlvr train --config my.yaml algorithm.kl_beta=0.01 sampling.group_size=16
    rlvr train --run-dir runs/x steps=200            # choose the run directory
    rlvr train --resume runs/x                       # continue from its last checkpoint
    rlvr train --resume runs/x steps=400             # extend a run (see rlvr.training.resume)
    rlvr train --describe                            # every config field with its help

Exit status: 0 done; 2 a bad config, data file, model path or resume request, found
before training starts. Anything else that fails is a bug: it surfaces with its traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

EXIT_CONFIG = 2


def add_parser(sub: Any, name: str, help_text: str) -> None:
    p = sub.add_parser(name, help=help_text, description=__doc__,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_common_arguments(p)
    p.add_argument("--resume", metavar="RUN_DIR", help="continue the run in RUN_DIR from its "
                   "newest checkpoint with its own config.yaml; overrides may only change "
                   "steps (to extend it) and checkpoint, log and evaluation cadence")


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("overrides", nargs="*", metavar="key.sub=value",
                   help="config overrides, applied after --config")
    p.add_argument("--config", "-c", help="YAML config file")
    p.add_argument("--run-dir", help="run directory (default runs/NAME-TIMESTAMP)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p.add_argument("--describe", action="store_true", help="list every config field and exit")


def load_cli_config(args: argparse.Namespace) -> Any:
    """The config of --config and the overrides, with its profile's defaults; tells what
    the real-model profile set and warns about settings that ruin a run (stderr)."""
    from rlvr.config import load_config, read_config_data
    from rlvr.training.config import TrainConfig
    from rlvr.training.profile import applied_defaults, config_warnings

    cfg = load_config(TrainConfig, args.config, list(args.overrides))
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


def run(args: argparse.Namespace) -> int:
    from rlvr.config import ConfigError
    from rlvr.runs import Progress, default_run_dir
    from rlvr.training.config import TrainConfig
    from rlvr.training.resume import resume_config

    if args.describe:
        print(describe(TrainConfig))
        return 0
    try:
        if args.resume:
            if args.config or args.run_dir:
                raise ConfigError("--resume takes the run's own config.yaml and directory; "
                                  "drop --config and --run-dir")
            cfg, run_dir = resume_config(args.resume, args.overrides), Path(args.resume)
        else:
            cfg = load_cli_config(args)
            run_dir = Path(args.run_dir) if args.run_dir else default_run_dir(cfg.name)
    except ConfigError as exc:
        print(f"rlvr train: config error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    return _train(cfg, run_dir, bool(args.resume), Progress(cfg.steps, quiet=args.quiet))


def _train(cfg: Any, run_dir: Path, resume: bool, progress: Any) -> int:
    from rlvr.config import ConfigError
    from rlvr.data.loading import DataError
    from rlvr.data.prompts import PromptError
    from rlvr.models.resolve import ModelNotFound
    from rlvr.training.run import ResumeError, train

    try:
        summary = train(cfg, run_dir, resume=resume, progress=progress)
    # Bad input the set-up finds before training: the config, a data file, the model
    # path, the prompt style. Any other error is a bug and keeps its traceback.
    except (ConfigError, DataError, PromptError, ModelNotFound, ResumeError) as exc:
        print(f"rlvr train: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    before, after = summary["eval"]["before"], summary["eval"]["after"]
    if before and after:  # "before" was shown live when measured; this is the result
        print(f"held-out accuracy: {before['accuracy']:.3f} -> {after['accuracy']:.3f} "
              "(before -> after RL)")
    print(f"run dir: {run_dir}  ({summary['steps']} steps, {summary['wall_seconds']:.0f} s)")
    return 0
