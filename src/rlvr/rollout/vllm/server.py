"""A vLLM server for rlvr's engine in server mode: one `VLLMRunner` behind JSON over HTTP.

Run where vLLM is installed (its own virtual environment is fine: this module imports
only the standard library, vllm and rlvr.rollout.vllm.runner):

    python -m rlvr.rollout.vllm.server --model DIR [--host 127.0.0.1] [--port 8100]

or, from rlvr's own environment, `rlvr vllm-serve --model MODEL`, which resolves MODEL
(a packaged alias, .gguf, or HF dir) and starts this module in the vLLM environment.

Endpoints (bodies and answers are JSON):
    GET  /health   -> {model, version, policy_version, vocab_size, max_model_len,
                       architectures}
    POST /generate {prompts: [[ids]], n, params}  -> {completions: [[{token_ids, logprobs,
                                                       finish_reason}]],
                                                     weights: {version, policy_version}}
    POST /score    {sequences: [[ids]], starts: [i]} -> {logprobs: [[float]],
                                                         weights: {version, policy_version}}
    POST /reload   {path, policy_version?}  -> {version, seconds}   (safetensors files in
                                               `path`, which must be readable by this
                                               process)
`version` counts the weight loads since the server started (the engine checks each of
its syncs moved it by one, and that each generation and probe used the load it synced:
no other writer in between); `policy_version` is what the last load's sender called its
weights (the trainer's policy version: an asynchronous run's producer tags its groups
with it), null when not said.
An error answers 500 with {error}. Requests are served one at a time (vLLM's `LLM` is
not re-entrant); the trainer sends one at a time anyway.
"""

from __future__ import annotations

import argparse
import json
import sys
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

from rlvr.rollout.http_json import send_json
from rlvr.rollout.vllm.runner import RunnerSettings, VLLMLoadError, VLLMRunner


def handler_for(runner: VLLMRunner) -> type[BaseHTTPRequestHandler]:
    routes = {
        "/generate": lambda body: {"completions": runner.generate(
            body["prompts"], int(body["n"]), body["params"]), "weights": runner.last_weights},
        "/score": lambda body: {"logprobs": runner.score(body["sequences"], body["starts"]),
                                "weights": runner.last_weights},
        "/reload": lambda body: runner.reload_from(body["path"], body.get("policy_version")),
    }

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path == "/health":
                self._answer(200, runner.describe())
            else:
                self._answer(404, {"error": f"no GET {self.path}"})

        def do_POST(self) -> None:  # noqa: N802
            route = routes.get(self.path)
            if route is None:
                self._answer(404, {"error": f"no POST {self.path}"})
                return
            try:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self._answer(200, route(body))
            except Exception as exc:  # the client gets the message, the server lives on
                self._answer(500, {"error": f"{type(exc).__name__}: {exc}"})

        def _answer(self, status: int, payload: dict[str, Any]) -> None:
            send_json(self, status, payload)

        def log_message(self, format: str, *args: Any) -> None:  # quiet: one line per call
            pass

    return Handler


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rlvr.rollout.vllm.server",
                                     description="serve a model with vLLM for rlvr's engine")
    parser.add_argument("--model", required=True, help="HF model directory")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8100)
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--max-model-len", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--kv-cache-gb", type=float, default=1.0, help="CPU KV cache size")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.3)
    parser.add_argument("--no-prefix-caching", action="store_true",
                        help="turn vLLM's automatic prefix caching off (on by default: an "
                        "episode's next turn reuses the KV of the prompt it continues)")
    args = parser.parse_args(argv)
    settings = RunnerSettings(model=args.model, dtype=args.dtype,
                              max_model_len=args.max_model_len, seed=args.seed,
                              kv_cache_gb=args.kv_cache_gb,
                              gpu_memory_utilization=args.gpu_memory_utilization,
                              prefix_caching=not args.no_prefix_caching)
    try:
        runner = VLLMRunner(settings)
    except VLLMLoadError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server = HTTPServer((args.host, args.port), handler_for(runner))
    print(f"rlvr vllm server ready on http://{args.host}:{server.server_port} "
          f"({args.model})", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
