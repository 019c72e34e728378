"""`rlvr eval` end to end on the tiny model: the CLI's numbers agree with what the
same model answers in-process, and its results file holds every attempt."""

from __future__ import annotations

import json

import pytest

from cli_helpers import run_cli
from rlvr.data.records import TaskRecord
from rlvr.evaluation.model_source import load, resolve
from rlvr.data.prompts import PromptRenderer
from rlvr.rollout.base import SamplingParams
from rlvr.rollout.hf import HFRolloutEngine
from rlvr.config import load_config, save_config
from rlvr.training.config import TrainConfig
from rlvr.training.tiny import build_tiny

TOKENS = 6


TEMPLATE = "{bos}Q: {prompt}\nA:"


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A run directory as the trainer lays it out: config.yaml (with its own prompt
    template) and checkpoints/step-NNNNNN, the newest a fresh tiny model."""
    run = tmp_path_factory.mktemp("run")
    save_config(load_config(TrainConfig, overrides=[f"prompt.template={TEMPLATE}"]),
                run / "config.yaml")
    build_tiny(run / "checkpoints" / "step-000001", seed=1)
    build_tiny(run / "checkpoints" / "step-000002", seed=2)
    return run


def test_cli_smoke_on_the_tiny_model(tiny_run, tmp_path):
    # What the tiny model answers greedily to "1+1=" becomes the gold of the first task, so the
    # CLI must score it (line 1) as passed and line 2 (gold "2") as failed: 1/2.
    model, tokenizer = load(resolve(tiny_run / "checkpoints" / "step-000002"))
    render = PromptRenderer(tokenizer, template=TEMPLATE).render
    text = HFRolloutEngine(model, tokenizer).generate(
        [render(TaskRecord("1+1=", "2", "exact", "x"))], 1, SamplingParams(max_new_tokens=TOKENS, temperature=0.0))[0][0].text
    assert text.strip()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in [
        {"prompt": "1+1=", "reference": text.strip(), "verifier": "exact"},
        {"prompt": "1+1=", "reference": "2", "verifier": "exact"}]))
    out = tmp_path / "results.json"
    result = run_cli("eval", str(tiny_run), "--dataset", str(tasks), "--n", "3", "--k", "1,2",
                     "--temperature", "0.8", "--max-new-tokens", str(TOKENS), "--output",
                     str(out), "--workers", "1", "--quiet", timeout=240)
    assert result.returncode == 0, result.stderr
    assert "greedy/accuracy" in result.stdout and "pass@2" in result.stdout
    data = json.loads(out.read_text())
    assert data["metrics"]["greedy/accuracy"] == 0.5
    greedy = {a["id"]: a for a in data["attempts"] if a["mode"] == "greedy"}
    assert greedy["tasks:1"]["completion"] == text and greedy["tasks:1"]["verdict"]["passed"] is True
    samples = [a for a in data["attempts"] if a["mode"] == "sample"]
    assert len(samples) == 2 * 3 and all(a["num_tokens"] <= TOKENS for a in samples)
    # pass@1 is the mean of the sampled verdicts, recomputed from the file.
    assert data["metrics"]["pass@1"] == pytest.approx(
        sum(a["verdict"]["passed"] for a in samples) / 6)
    # the newest checkpoint, prompted with the run's own template
    assert data["config"]["model"].endswith("step-000002") and data["config"]["n"] == 3
    assert data["records"][0]["prompt"] == "<s>Q: 1+1=\nA:"


def test_cli_bad_inputs_exit_2(tiny_run, tmp_path):
    result = run_cli("eval", str(tiny_run), "--dataset", "nonesuch", timeout=60)
    assert result.returncode == 2 and "neither a benchmark" in result.stderr
    result = run_cli("eval", str(tmp_path / "missing"), "--dataset", "gsm8k", timeout=60)
    assert result.returncode == 2 and "not found" in result.stderr
    result = run_cli("eval", str(tiny_run), "--dataset", "gsm8k", "--k", "0", timeout=60)
    assert result.returncode == 2 and "--k" in result.stderr
    # the tiny tokenizer has no chat template
    result = run_cli("eval", str(tiny_run), "--dataset", "gsm8k", "--prompt-style", "chat",
                     "--limit", "1", timeout=120)
    assert result.returncode == 2 and "chat template" in result.stderr


def test_cli_humaneval_plain_prompts_stop_at_the_next_top_level_statement(tiny_run, tmp_path):
    out = tmp_path / "he.json"
    result = run_cli("eval", str(tiny_run), "--dataset", "humaneval", "--limit", "1",
                     "--max-new-tokens", "4", "--output", str(out), "--workers", "1",
                     "--quiet", timeout=240)
    assert result.returncode == 0, result.stderr
    data = json.loads(out.read_text())
    assert "\ndef" in data["config"]["stop"] and data["config"]["prompt"]["style"] == "plain"
    attempt = data["attempts"][0]
    # graded in the code sandbox (a 4-character body fails; it is not a harness error)
    assert attempt["verdict"]["reason"] not in ("error", "timeout", "invalid_reference")
    assert data["records"][0]["reference"]["entry_point"] == "has_close_elements"


def test_cli_shows_its_progress_in_a_log(tiny_run, tmp_path):
    # stderr is a pipe here, as in a log: a start line and an end line (no bar)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"prompt": f"{i}+1=", "reference": str(i + 1),
                                         "verifier": "exact"}) + "\n" for i in range(3)))
    result = run_cli("eval", str(tiny_run), "--dataset", str(tasks), "--max-new-tokens", "4",
                     "--output", str(tmp_path / "r.json"), "--workers", "1", timeout=240)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    label = f"eval {tasks}"
    assert f"{label}: 3 prompt passes (greedy)" in lines
    done = [line for line in lines if line.startswith(f"{label} [done] 3/3 prompt passes, ")]
    assert len(done) == 1 and "/3 passed, " in done[0] and "\r" not in result.stderr
