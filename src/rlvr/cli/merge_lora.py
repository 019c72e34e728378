"""`rlvr merge-lora ADAPTER_DIR --out DIR [--base BASE_DIR]`: fold a LoRA adapter (a
checkpoint of a LoRA run) into its base model and write a plain HF model dir."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rlvr.cli.common import command_parser
from rlvr.cli.exit_codes import BAD_INPUT, OK


def add_parser(sub: Any, name: str, help_text: str) -> None:
    p = command_parser(sub, name, help_text, __doc__, reflow=True)
    p.add_argument("adapter", help="directory holding adapter_config.json")
    p.add_argument("--out", required=True, help="where the merged model dir goes")
    p.add_argument("--base", default=None, help="base model dir (default: the one recorded "
                   "in adapter_config.json)")


def run(args: argparse.Namespace) -> int:
    from rlvr.models.lora import merge_lora

    try:
        out = merge_lora(args.adapter, args.out, args.base)
    except (FileNotFoundError, ImportError) as exc:
        print(f"rlvr merge-lora: {exc}", file=sys.stderr)
        return BAD_INPUT
    print(out)
    return OK
