"""A minimal OpenAI-compatible chat server for a local Hugging Face model: the judge
endpoint for tests and small setups (`rlvr judge-serve`), no vLLM needed.

Routes: POST /v1/chat/completions (messages, model, temperature, max_tokens, n=1,
response_format: a flat integer json_schema, see chat_schema.py),
GET /v1/models, GET /health. Answers carry `usage` (prompt and completion tokens) like
OpenAI's. temperature 0 is greedy decoding, so the same request gets the same answer.
One request generates at a time (a lock): the model is small and the CPU shared; the
judge's own concurrency limit keeps clients from piling up.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from rlvr.serve.chat_schema import SchemaError, constrained_json, integer_fields
from rlvr.rollout.http_json import send_json


class RequestError(ValueError):
    def __init__(self, status: int, message: str, kind: str = "invalid_request_error") -> None:
        super().__init__(message)
        self.status, self.kind = status, kind


class ChatModel:
    """A causal LM and its tokenizer's chat template, generating one reply at a time."""

    def __init__(self, model_dir: str, name: str, max_tokens_limit: int = 1024) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.torch, self.name, self.max_tokens_limit = torch, name, max_tokens_limit
        self.tokenizer = AutoTokenizer.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
        self.lock = threading.Lock()

    def complete(self, body: dict[str, Any]) -> dict[str, Any]:
        messages, max_tokens, temperature = self._check(body)
        try:
            fields = integer_fields(body.get("response_format"))
        except SchemaError as exc:
            raise RequestError(400, str(exc)) from None
        ids = self.tokenizer.apply_chat_template(messages, add_generation_prompt=True,
                                                 return_tensors="pt", return_dict=True)
        if fields is not None:
            with self.lock:
                text = constrained_json(self.model, self.tokenizer, ids["input_ids"], fields)
            new = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            return self._answer(text, int(ids["input_ids"].shape[1]), len(new), "stop")
        sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {
            "do_sample": False}
        with self.lock, self.torch.no_grad():
            out = self.model.generate(**ids, max_new_tokens=max_tokens,
                                      pad_token_id=self.tokenizer.eos_token_id,
                                      top_p=None, top_k=None, **sampling)
        new = out[0, ids["input_ids"].shape[1]:].tolist()
        ended = bool(new) and new[-1] == self.tokenizer.eos_token_id
        text = self.tokenizer.decode(new, skip_special_tokens=True)
        return self._answer(text, int(ids["input_ids"].shape[1]), len(new),
                            "stop" if ended else "length")

    def _answer(self, text: str, prompt_tokens: int, completion_tokens: int,
                finish: str) -> dict[str, Any]:
        return {"id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion",
                "created": int(time.time()), "model": self.name,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": finish}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                          "total_tokens": prompt_tokens + completion_tokens}}

    def _check(self, body: Any) -> tuple[list[dict[str, str]], int, float]:
        if not isinstance(body, dict):
            raise RequestError(400, "body must be a JSON object")
        if body.get("model") not in (None, self.name):
            raise RequestError(404, f"model {body.get('model')!r} is not served here "
                               f"(this server: {self.name!r})", "model_not_found")
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) and isinstance(m.get("role"), str)
                and isinstance(m.get("content"), str) for m in messages):
            raise RequestError(400, "'messages' must be a non-empty list of "
                               "{role, content} with string content")
        if body.get("n", 1) != 1:
            raise RequestError(400, "only n=1 is supported")
        max_tokens = body.get("max_tokens", 256)
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise RequestError(400, "'max_tokens' must be a positive integer")
        temperature = body.get("temperature", 1.0)
        if not isinstance(temperature, (int, float)) or isinstance(temperature, bool) \
                or temperature < 0:
            raise RequestError(400, "'temperature' must be a number >= 0")
        return ([{"role": m["role"], "content": m["content"]} for m in messages],
                min(max_tokens, self.max_tokens_limit), float(temperature))


def handler_for(chat: ChatModel) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
            if self.path in ("/health", "/v1/health"):
                self._answer(200, {"status": "ok", "model": chat.name})
            elif self.path == "/v1/models":
                self._answer(200, {"object": "list", "data": [
                    {"id": chat.name, "object": "model", "owned_by": "rlvr"}]})
            else:
                self._error(RequestError(404, f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:  # noqa: N802
            if self.path != "/v1/chat/completions":
                self._error(RequestError(404, f"no route {self.path}", "not_found"))
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"null")
                except ValueError:
                    raise RequestError(400, "body is not JSON") from None
                self._answer(200, chat.complete(body))
            except RequestError as exc:
                self._error(exc)
            except Exception as exc:  # a generation failure is the server's, not the client's
                self._error(RequestError(500, f"{type(exc).__name__}: {exc}", "server_error"))

        def _error(self, exc: RequestError) -> None:
            self._answer(exc.status, {"error": {"message": str(exc), "type": exc.kind}})

        def _answer(self, status: int, payload: dict[str, Any]) -> None:
            send_json(self, status, payload)

        def log_message(self, format: str, *args: Any) -> None:  # one short line per call
            print(f"judge-serve: {self.command} {self.path} {args[1] if len(args) > 1 else ''}",
                  flush=True)

    return Handler


def serve(model_dir: str, name: str, host: str, port: int, threads: int | None = None,
          max_tokens_limit: int = 1024) -> None:
    import torch

    if threads:
        torch.set_num_threads(threads)
    chat = ChatModel(model_dir, name, max_tokens_limit)
    server = ThreadingHTTPServer((host, port), handler_for(chat))
    print(f"judge-serve: {name} on http://{host}:{server.server_address[1]}/v1 "
          "(OpenAI chat completions)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--name", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8200)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    serve(args.model_dir, args.name, args.host, args.port, args.threads)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
