"""`rlvr judge-serve`: serve a local model as an OpenAI-compatible chat endpoint, for
the `judge` verifier (or anything else that speaks /v1/chat/completions).

    rlvr judge-serve smollm2-135m-instruct --port 8200
    rlvr verify judge --options '{"base_url": "http://127.0.0.1:8200/v1",
        "model": "smollm2-135m-instruct"}' --reference '4' --completion 'Answer: 4'

MODEL is anything `rlvr train`'s model.path takes (packaged alias, .gguf, HF dir); the
endpoint serves it under that name (--served-name changes it). Generation runs with
transformers on this machine's CPU or GPU, one request at a time; for throughput use a
vLLM OpenAI server instead (the judge only needs the endpoint's URL and model name).
"""

from __future__ import annotations

import argparse
import sys

from rlvr.cli.common import command_parser
from rlvr.cli.exit_codes import BAD_INPUT, OK


def add_parser(sub: argparse._SubParsersAction, name: str, help_text: str) -> None:
    p = command_parser(sub, name, help_text, __doc__)
    p.add_argument("model", help="packaged alias, .gguf file or HF model dir")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    p.add_argument("--port", type=int, default=8200, help="0 picks a free port (printed)")
    p.add_argument("--served-name", default=None, help="the model name clients send "
                   "(default: MODEL as given)")
    p.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    p.add_argument("--max-tokens-limit", type=int, default=1024,
                   help="cap on a request's max_tokens")


def run(args: argparse.Namespace) -> int:
    from rlvr.models import ModelNotFound, resolve_model
    from rlvr.serve.chat_server import serve

    try:
        model_dir = str(resolve_model(args.model))
    except ModelNotFound as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    serve(model_dir, args.served_name or args.model, args.host, args.port, args.threads,
          args.max_tokens_limit)
    return OK
