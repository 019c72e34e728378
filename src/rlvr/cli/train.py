"""`rlvr train`: RLVR training. With no arguments, the embedded demo: a tiny Llama with a
character tokenizer, a short supervised warm-start on (sloppy) worked examples of
2-digit addition, held-out accuracy, RL with the "exact" verifier, accuracy again.

    rlvr train                                       # the embedded demo (a few minutes)
    rlvr train --config my.yaml algorithm.kl_beta=0.01 sampling.group_size=16
    rlvr train --run-dir runs/x steps=200            # choose the run directory
    rlvr train --resume runs/x                       # continue from its last checkpoint
    rlvr train --describe                            # every config field with its help
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
                   "newest checkpoint (its config.yaml is used; overrides are refused)")


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("overrides", nargs="*", metavar="key.sub=value",
                   help="config overrides, applied after --config")
    p.add_argument("--config", "-c", help="YAML config file")
    p.add_argument("--run-dir", help="run directory (default runs/NAME-TIMESTAMP)")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    p.add_argument("--describe", action="store_true", help="list every config field and exit")


def load_cli_config(args: argparse.Namespace, path: str | None = None) -> Any:
    from rlvr.config import load_config
    from rlvr.training.config import TrainConfig

    return load_config(TrainConfig, path or args.config, list(args.overrides))


def run(args: argparse.Namespace) -> int:
    from rlvr.config import ConfigError, describe_config
    from rlvr.runs import Progress, default_run_dir
    from rlvr.training.config import TrainConfig
    from rlvr.training.run import ResumeError, train

    if args.describe:
        print("\n".join(describe_config(TrainConfig)))
        return 0
    try:
        if args.resume:
            if args.overrides or args.config or args.run_dir:
                raise ConfigError("--resume takes the run's own config.yaml; drop --config, "
                                  "--run-dir and overrides")
            config_path = Path(args.resume) / "config.yaml"
            if not config_path.is_file():
                raise ConfigError(f"{args.resume}: not a run directory (no config.yaml)")
            cfg = load_cli_config(args, str(config_path))
            run_dir = Path(args.resume)
        else:
            cfg = load_cli_config(args)
            run_dir = Path(args.run_dir) if args.run_dir else default_run_dir(cfg.name)
    except ConfigError as exc:
        print(f"rlvr train: config error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    progress = Progress(cfg.steps, quiet=args.quiet)
    try:
        summary = train(cfg, run_dir, resume=bool(args.resume), progress=progress)
    except (ResumeError, ValueError, FileNotFoundError) as exc:
        print(f"rlvr train: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    before, after = summary["eval"]["before"], summary["eval"]["after"]
    if before and after:
        print(f"held-out accuracy before RL: {before['accuracy']:.3f}")
        print(f"held-out accuracy after RL:  {after['accuracy']:.3f}")
    print(f"run dir: {run_dir}  ({summary['steps']} steps, {summary['wall_seconds']:.0f} s)")
    return 0
