"""The judge against vLLM's own OpenAI-compatible server (`vllm serve`'s entry point)
serving SmolLM2-135M-Instruct: structured verdicts through vLLM's guided decoding,
token counts from its `usage`, and no injected completion above the same answer without
the injection. Runs in the vLLM environment (`make test-vllm`); in rlvr's main
environment it skips with the reason, like the other tests/test_vllm_*.py."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import urllib.request

import pytest

from test_judge_injection import ATTACKS
from test_judge_real_model import INJECTED, check_shape, verdicts_by_mode, verify_right_answer
from vllm_helpers import VLLM_MISSING, free_port

pytest.importorskip("vllm", reason=VLLM_MISSING)

MODEL = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    from rlvr.models import resolve_model
    from rlvr.rollout.vllm.runner import thread_binding

    model_dir = resolve_model(MODEL)
    port = free_port()
    log = tmp_path_factory.mktemp("vllm-judge") / "server.log"
    env = {**os.environ, "VLLM_CPU_OMP_THREADS_BIND": thread_binding(),
           "VLLM_CPU_KVCACHE_SPACE": "1", "PYTHONUNBUFFERED": "1"}
    with open(log, "wb") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model",
             str(model_dir), "--served-model-name", MODEL, "--host", "127.0.0.1", "--port",
             str(port), "--max-model-len", "2048", "--dtype", "float32"],
            stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        yield _wait(server, port, log)
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()


def _wait(server: subprocess.Popen, port: int, log) -> str:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"vLLM's OpenAI server exited ({server.returncode}):\n"
                        f"{log.read_text(errors='replace')[-3000:]}")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
            return f"http://127.0.0.1:{port}/v1"
        except OSError:
            time.sleep(1)
    pytest.fail("vLLM's OpenAI server did not answer within 300 s")


def options(url: str, **extra) -> dict:
    return {"base_url": url, "model": MODEL, "max_tokens": 48, "timeout_s": 60,
            "retries": 0, **extra}


def test_structured_verdicts_and_token_counts_from_vllm(endpoint):
    verdict = verify_right_answer(options(endpoint, structured=True), timeout=180)
    check_shape(verdict)
    # vLLM's guided decoding holds the answer to the verdict's schema: always a verdict
    assert verdict["reason"] in ("passed", "below_threshold"), verdict
    judge = verdict["details"]["judge"]
    assert judge["prompt_tokens"] > 0 and judge["completion_tokens"] > 0


def test_injections_never_beat_the_plain_answer_on_vllm(endpoint, tmp_path):
    texts = {"honest": "Lyon.", **{name: ATTACKS[name] for name in INJECTED}}
    modes = [("default", {"structured": True}), ("quoting_only_free_text", {"injection": "flag"})]
    found = verdicts_by_mode(tmp_path, texts, {mode: options(endpoint, **extra)
                                               for mode, extra in modes}, timeout=300)
    for mode, _ in modes:
        verdicts = found[mode]
        for name, verdict in verdicts.items():
            print(f"{mode} {name}: {verdict['reason']} score={verdict['score']}")
            check_shape(verdict)
        for name in INJECTED:
            assert verdicts[name]["score"] <= verdicts["honest"]["score"], (mode, name)
