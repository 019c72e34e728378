"""`rlvr rm-train`: train a Bradley-Terry reward model on preference pairs, for the
`reward_model` verifier.

Pairs are JSONL/JSON/Parquet rows {"prompt": ..., "chosen": ..., "rejected": ...}
(chosen is the preferred completion). Every row is checked before any model loads.

    rlvr rm-train data.path=pairs.jsonl model.path=smollm2-135m-instruct
    rlvr rm-train data.path=pairs.jsonl data.eval_path=held_out.jsonl train.epochs=2 \\
        train.lr=1e-5 train.batch_size=8 --run-dir runs/rm
    rlvr rm-train --describe                  # every option

Prints pairwise accuracy on the held-out pairs before and after training, and writes
RUN_DIR/model: an HF model dir (AutoModelForSequenceClassification.from_pretrained
loads it) with rlvr_reward_model.json (prompt style, the training set's reward mean
and std for normalisation, the evaluation). Use it as a reward:
    rlvr train reward.verifier=reward_model reward.options.model=RUN_DIR/model
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rlvr.cli.common import config_command_parser, with_log_every
from rlvr.cli.exit_codes import BAD_INPUT, OK


def add_parser(sub: Any, name: str, help_text: str) -> None:
    config_command_parser(sub, name, help_text, __doc__)


def run(args: argparse.Namespace) -> int:
    from rlvr.config import ConfigError, describe_config, load_config
    from rlvr.data.loading import DataError
    from rlvr.models.resolve import ModelNotFound
    from rlvr.training.rm_config import RMTrainConfig

    if args.describe:
        print("\n".join(describe_config(RMTrainConfig)))
        return OK
    try:
        cfg = load_config(RMTrainConfig, args.config, with_log_every(args))
    except ConfigError as exc:
        print(f"rlvr rm-train: config error: {exc}", file=sys.stderr)
        return BAD_INPUT
    try:
        train, held_out = _pairs(cfg)
        return _train(cfg, args, train, held_out)
    except DataError as exc:
        print(f"rlvr rm-train: data error: {exc}", file=sys.stderr)
        return BAD_INPUT
    except ModelNotFound as exc:
        print(f"rlvr rm-train: config error: model.path: {exc}", file=sys.stderr)
        return BAD_INPUT


def _pairs(cfg: Any) -> tuple[list, list]:
    """(train, held-out) pairs, every row checked; before any model is loaded."""
    from rlvr.training.preference_data import load_pairs, split_held_out

    pairs = load_pairs(cfg.data.path, cfg.data.limit)
    if cfg.data.eval_path:
        return pairs, load_pairs(cfg.data.eval_path)
    return split_held_out(pairs, cfg.data.eval_fraction, cfg.seed)


def _train(cfg: Any, args: argparse.Namespace, train: list, held_out: list) -> int:
    from rlvr.config import save_config
    from rlvr.runs import Progress, RunDir, default_run_dir
    from rlvr.training.reward_model import (load_reward_backbone, save_reward_model,
                                            total_steps, train_reward_model)
    from rlvr.training.run import seed_everything

    run = RunDir(Path(args.run_dir) if args.run_dir else default_run_dir(cfg.name))
    run.path.mkdir(parents=True, exist_ok=True)
    save_config(cfg, run.config)
    seed_everything(cfg.seed)
    model, tokenizer = load_reward_backbone(cfg.model, cfg.seed)
    progress = Progress(total_steps(len(train), cfg.train), quiet=args.quiet,
                        log_every=cfg.log_every, label="rm")
    progress.message(f"rm-train: {len(train)} training pairs, {len(held_out)} held out")
    meta = train_reward_model(model, tokenizer, train, held_out, cfg.train, cfg.seed,
                              progress.step)
    progress.close()
    meta["base_model"] = cfg.model.path or "tiny"
    directory = save_reward_model(model, tokenizer, run.path / "model", meta)
    before, after = meta["eval"]["before"], meta["eval"]["after"]
    progress.message(f"held-out pairwise accuracy: {before['accuracy']:.3f} -> "
                     f"{after['accuracy']:.3f} ({after['pairs']} pairs)")
    run.write_summary({"rm": meta, "model": str(directory)})
    print(json.dumps({"model": str(directory), "accuracy_before": before["accuracy"],
                      "accuracy_after": after["accuracy"], "stats": meta["stats"],
                      "steps": meta["train"]["steps"],
                      "seconds": round(meta["train"]["seconds"], 2)}))
    return OK
