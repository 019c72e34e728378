"""HTTP client of rlvr's vLLM server (rlvr.rollout.vllm.server): the same methods as
`VLLMRunner`, so the engine does not care which it has. Standard library only."""

from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
from typing import Any


class VLLMServerError(RuntimeError):
    """The server is unreachable, died, timed out or answered an error. The message
    names the URL; a training run stops at that step and resumes from its checkpoint."""


class VLLMClient:
    def __init__(self, url: str, timeout_s: float = 600.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        # the weights the server says its last `generate` or `score` used ({version,
        # policy_version}; None before the first, or from a server that does not say)
        self.last_weights: dict[str, Any] | None = None

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/health", None, timeout=10.0)

    def generate(self, prompts: list[list[int]], n: int,
                 params: dict[str, Any]) -> list[list[dict[str, Any]]]:
        answer = self._call("POST", "/generate", {"prompts": prompts, "n": n, "params": params})
        self.last_weights = answer.get("weights")
        completions = answer["completions"]
        if len(completions) != len(prompts) or any(len(g) != n for g in completions):
            raise VLLMServerError(f"the vLLM server at {self.url} answered "
                                  f"{[len(g) for g in completions]} samples for "
                                  f"{len(prompts)} prompts x {n}")
        return completions

    def score(self, sequences: list[list[int]], starts: list[int]) -> list[list[float]]:
        answer = self._call("POST", "/score", {"sequences": sequences, "starts": starts})
        self.last_weights = answer.get("weights")
        return answer["logprobs"]

    def reload_from(self, path: str, policy_version: int | None = None) -> dict[str, Any]:
        return self._call("POST", "/reload", {"path": path, "policy_version": policy_version})

    def load_tensors(self, named: Any, policy_version: int | None = None) -> dict[str, Any]:
        raise VLLMServerError("a vLLM server loads weights from files (sync: file)")

    def _call(self, method: str, path: str, body: dict[str, Any] | None,
              timeout: float | None = None) -> dict[str, Any]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method,
                                         headers={"Content-Type": "application/json"})
        where = f"the vLLM server at {self.url} ({method} {path})"
        try:
            with urllib.request.urlopen(request, timeout=timeout or self.timeout_s) as reply:
                return json.loads(reply.read())
        except urllib.error.HTTPError as exc:
            raise VLLMServerError(f"{where} failed: {_error_text(exc)}") from None
        except (urllib.error.URLError, ConnectionError, socket.timeout, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            raise VLLMServerError(f"{where} is unreachable or died: {reason}. Start it with "
                                  "`rlvr vllm-serve --model MODEL --port PORT`; a training "
                                  "run resumes from its last checkpoint with "
                                  "`rlvr train --resume RUN_DIR`") from None


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        return json.loads(exc.read()).get("error", str(exc))
    except (ValueError, OSError):
        return str(exc)
