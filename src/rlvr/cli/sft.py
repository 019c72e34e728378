"""`rlvr sft`: supervised warm-start on worked examples, saved as a Hugging Face model dir.

Uses the same config as `rlvr train` (its `model`, `data`, `prompt` and `sft` sections):

    rlvr sft                                  # the demo's warm-start on the tiny model
    rlvr sft sft.steps=500 --run-dir runs/sft
    rlvr sft --log-every 50 > sft.log 2>&1    # in a log, a line every 50 steps

Progress goes to stderr as `rlvr train`'s does: a bar on a terminal, else a line every
--log-every N steps (and the first and last).
    rlvr train model.path=runs/sft/model profile=demo sft.steps=0   # RL from it
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rlvr.cli.common import config_command_parser, describe, load_cli_config, with_log_every
from rlvr.cli.exit_codes import BAD_INPUT, OK


def add_parser(sub: Any, name: str, help_text: str) -> None:
    config_command_parser(sub, name, help_text, __doc__)


def run(args: argparse.Namespace) -> int:
    from rlvr.config import ConfigError, save_config
    from rlvr.runs import Progress, RunDir, default_run_dir
    from rlvr.training.config import TrainConfig
    from rlvr.training.run import seed_everything
    from rlvr.training.setup import load_data, load_policy, prompt_renderer
    from rlvr.training.loop import run_environment
    from rlvr.training.sft import supervised_warmstart
    from rlvr.training.sft_prompts import sft_examples

    if args.describe:
        print(describe(TrainConfig))
        return OK
    args.overrides = with_log_every(args)
    try:
        cfg = load_cli_config(args)
        if cfg.sft.steps < 1:  # the real-model profile's default is no warm-start
            raise ConfigError("must be >= 1 for `rlvr sft` (give sft.steps=N)", "sft.steps")
    except ConfigError as exc:
        print(f"rlvr sft: config error: {exc}", file=sys.stderr)
        return BAD_INPUT
    run = RunDir(Path(args.run_dir) if args.run_dir else default_run_dir(f"{cfg.name}-sft"))
    run.path.mkdir(parents=True, exist_ok=True)
    save_config(cfg, run.config)
    progress = Progress(cfg.sft.steps, quiet=args.quiet, log_every=cfg.log_every, label="sft")
    seed_everything(cfg.seed)
    model, tokenizer = load_policy(cfg.model, cfg.seed)
    records, _ = load_data(cfg.data, cfg.seed)
    renderer = prompt_renderer(cfg.prompt, tokenizer)
    examples = sft_examples(cfg.sft, renderer, run_environment(cfg, tokenizer))
    stats = supervised_warmstart(model, tokenizer, renderer, records, cfg.sft,
                                 cfg.seed + cfg.sft.seed_offset, progress.step, examples)
    progress.close()
    model.save_pretrained(run.path / "model")
    tokenizer.save_pretrained(run.path / "model")
    run.write_summary({"sft": stats, "model": str(run.path / "model")})
    print(json.dumps({"model": str(run.path / "model"), **stats}))
    return OK
