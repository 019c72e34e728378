"""vLLM servers placed as Ray actors: rlvr's vLLM server (rlvr.rollout.vllm.server) started
by an actor on whichever node Ray picks (a GPU node with `num_gpus=1`), its URL handed to
the engine's server mode (`sampling.vllm.mode=server`, `sampling.vllm.url=...`).

    import ray; ray.init()
    servers = start_vllm_servers("smollm2-135m-instruct", count=1)
    url = servers[0].url            # -> sampling.vllm.url
    ...
    stop_vllm_servers(servers)

The actor runs the server as a child process with the vLLM environment's Python on its
node (rlvr.rollout.vllm.env: $RLVR_VLLM_PYTHON, this Python, or .venv-vllm), and kills
it when stopped or when the actor dies. Weights reach it as server mode sends them: a
safetensors file the server must be able to read, so today the actor must share a
filesystem path with the trainer (same node, or `sampling.vllm.sync_dir` on shared
storage); an NCCL weight group for remote nodes is planned (docs/SCALING.md).
Ray is optional (`pip install -e '.[ray]'`).
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

READY = "rlvr vllm server ready"


class _ServerProcess:
    """The actor's body (a plain class, wrapped by ray.remote in start_vllm_servers)."""

    def __init__(self, model_dir: str, host: str, args: list[str]) -> None:
        from rlvr.rollout.vllm.env import require_vllm_python

        with socket.socket() as probe:
            probe.bind((host, 0))
            self.port = probe.getsockname()[1]
        self.host = host
        self.log = Path(f"/tmp/rlvr-vllm-actor-{self.port}.log")
        with self.log.open("w") as out:
            self.process = subprocess.Popen(
                [require_vllm_python(), "-m", "rlvr.rollout.vllm.server", "--model",
                 model_dir, "--host", host, "--port", str(self.port), *args],
                stdout=out, stderr=subprocess.STDOUT)

    def wait_ready(self, timeout_s: float) -> str:
        """The server's URL once it serves; RuntimeError with its log's tail if it died
        or did not start in time."""
        import ray

        deadline = time.monotonic() + timeout_s
        while READY not in self.log.read_text():
            if self.process.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text()[-2000:]
                raise RuntimeError(f"the vLLM server on port {self.port} did not start "
                                   f"(exit {self.process.poll()}):\n{tail}")
            time.sleep(0.5)
        host = self.host if self.host != "0.0.0.0" else ray.util.get_node_ip_address()
        return f"http://{host}:{self.port}"

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()

    def __del__(self) -> None:
        self.stop()


@dataclass
class VLLMServerHandle:
    actor: Any
    url: str


def start_vllm_servers(model: str, count: int = 1, num_cpus: float = 1.0,
                       num_gpus: float = 0.0, host: str = "127.0.0.1",
                       server_args: tuple[str, ...] = (),
                       timeout_s: float = 600.0) -> list[VLLMServerHandle]:
    """`count` servers of `model` (anything `rlvr train`'s model.path takes, resolved
    here), each a Ray actor holding `num_cpus`/`num_gpus`; host "0.0.0.0" serves other
    nodes (the URL then names the actor's node). Ray must be initialised."""
    import ray

    from rlvr.models import resolve_model

    model_dir = str(resolve_model(model))
    actor_class = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus)(_ServerProcess)
    actors = [actor_class.remote(model_dir, host, list(server_args)) for _ in range(count)]
    urls = ray.get([a.wait_ready.remote(timeout_s) for a in actors])
    return [VLLMServerHandle(a, u) for a, u in zip(actors, urls)]


def stop_vllm_servers(servers: list[VLLMServerHandle]) -> None:
    import ray

    ray.get([s.actor.stop.remote() for s in servers])
    for s in servers:
        ray.kill(s.actor)
