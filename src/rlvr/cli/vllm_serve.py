"""`rlvr vllm-serve`: start a vLLM server for `sampling.engine=vllm` in server mode.

    rlvr vllm-serve --model smollm2-135m-instruct --port 8100
    rlvr train configs/x.yaml sampling.engine=vllm sampling.vllm.mode=server \
        sampling.vllm.url=http://127.0.0.1:8100

MODEL is anything `rlvr train`'s model.path takes (packaged alias, .gguf, HF dir); it is
resolved here, in rlvr's environment, and the server (rlvr.rollout.vllm.server) runs in
the vLLM environment: this Python if it has vllm, else .venv-vllm (`make vllm-env`), or
$RLVR_VLLM_PYTHON. The trainer sends its own weights at start, so the server's model
need only share the trainer's architecture and vocabulary.
"""

from __future__ import annotations

import argparse
import os
import sys

from rlvr.cli.common import command_parser
from rlvr.cli.exit_codes import BAD_INPUT, OK


def add_parser(sub: argparse._SubParsersAction, name: str, help_text: str) -> None:
    p = command_parser(sub, name, help_text, __doc__)
    p.add_argument("--model", required=True, help="packaged alias, .gguf file or HF dir")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: loopback)")
    p.add_argument("--port", type=int, default=8100)
    p.add_argument("--dtype", default="float32")
    p.add_argument("--max-model-len", type=int, default=2048)
    p.add_argument("--kv-cache-gb", type=float, default=1.0, help="CPU: KV cache memory")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    p.add_argument("--seed", type=int, default=0)


def server_command(args: argparse.Namespace, python: str, model_dir: str) -> list[str]:
    return [python, "-m", "rlvr.rollout.vllm.server", "--model", model_dir,
            "--host", args.host, "--port", str(args.port), "--dtype", args.dtype,
            "--max-model-len", str(args.max_model_len), "--kv-cache-gb", str(args.kv_cache_gb),
            "--gpu-memory-utilization", str(args.gpu_memory_utilization),
            "--seed", str(args.seed)]


def run(args: argparse.Namespace) -> int:
    from rlvr.models import resolve_model
    from rlvr.models.resolve import ModelNotFound
    from rlvr.rollout.vllm.env import require_vllm_python

    try:
        model_dir = str(resolve_model(args.model))
        python = require_vllm_python()
    except (ModelNotFound, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return BAD_INPUT
    command = server_command(args, python, model_dir)
    print(f"starting: {' '.join(command)}", flush=True)
    # Replace this process: a signal to `rlvr vllm-serve` (terminate, Ctrl-C) reaches the
    # server itself, and no orphaned server outlives its launcher.
    os.execv(command[0], command)
    return OK  # not reached
