"""The evaluation runner end to end with a scripted engine and the real verifier pool."""

from __future__ import annotations

import json

import pytest

from rlvr.data.records import TaskRecord
from rlvr.evaluation.report import format_table, write_results
from rlvr.evaluation.held_out import EvalPlan, held_out_eval
from rlvr.evaluation.runner import EvalSettings, evaluate
from rlvr.verifiers.pool import VerifierPool

from eval_helpers import ScriptedEngine


RECORDS = [TaskRecord("1+1", "2", "exact", "p1", {"level": 1}),
           TaskRecord("2+2", "4", "exact", "p2", {"level": 2}),
           TaskRecord("3+3", "6", "exact", "p3", {"level": 2})]
ENGINE = ScriptedEngine(
    greedy={"Q: 1+1": "Answer: 2", "Q: 2+2": "Answer: 5", "Q: 3+3": "Answer: 6"},
    samples={"Q: 1+1": ["Answer: 2", "Answer: 3", "Answer: 3", "Answer: 2"],
             "Q: 2+2": ["Answer: 5", "Answer: 4", "Answer: 5", "Answer: 5"],
             "Q: 3+3": ["Answer: 6", "Answer: 6", "Answer: 6", "Answer: 7"]})


@pytest.fixture(scope="module")
def pool():
    with VerifierPool(workers=2) as p:
        yield p


def test_evaluate_metrics_attempts_and_results_file(pool, tmp_path):
    settings = EvalSettings(greedy=True, n=4, ks=(1, 2, 4), temperature=0.7, batch_size=2,
                            max_new_tokens=16, seed=5)
    result = evaluate(ENGINE, RECORDS, lambda record: f"Q: {record.prompt}", settings, pool=pool,
                      categories=["level"], info={"dataset": "toy"})
    m = result.metrics
    assert m["greedy/accuracy"] == pytest.approx(2 / 3)
    # correct samples: p1 2 of 4, p2 1 of 4, p3 3 of 4.
    assert m["pass@1"] == pytest.approx((2 / 4 + 1 / 4 + 3 / 4) / 3)
    # pass@2 = 1 - C(4-c,2)/C(4,2): p1 1 - 1/6, p2 1 - 3/6, p3 1 - 0.
    assert m["pass@2"] == pytest.approx((5 / 6 + 3 / 6 + 1) / 3)
    # maj@4: p1 "2" and "3" tie 2-2, "2" first -> right; p2 "5" wrong; p3 "6" right.
    assert m["maj@4"] == pytest.approx(2 / 3)
    assert m["count"] == 3
    assert result.breakdown["level"]["2"]["greedy/accuracy"] == 0.5
    # batches of 2 prompts: greedy at temperature 0, samples seeded 5, 6 by batch.
    temps = [(len(p), n, params.temperature, params.seed) for p, n, params in ENGINE.calls[-4:]]
    assert temps == [(2, 1, 0.0, 5), (1, 1, 0.0, 5), (2, 4, 0.7, 5), (1, 4, 0.7, 6)]
    path = write_results(result, tmp_path / "out" / "results.json")
    data = json.loads(path.read_text())
    assert len(data["attempts"]) == 3 + 12
    first = data["attempts"][0]
    assert first["id"] == "p1" and first["mode"] == "greedy"
    assert first["verdict"]["passed"] is True and first["completion"] == "Answer: 2"
    assert data["config"]["n"] == 4 and data["config"]["dataset"] == "toy"
    assert data["records"][1]["prompt"] == "Q: 2+2"
    table = format_table(result)
    assert "pass@2" in table and "level" in table


def test_training_hook_returns_flat_metrics_with_the_verifier_override(pool):
    render = lambda r: f"Q: {r.prompt}"  # noqa: E731
    metrics = held_out_eval(ENGINE, render, pool, RECORDS[:2], EvalPlan(max_new_tokens=8))
    assert metrics["greedy/accuracy"] == 0.5
    # the trainer's reward.verifier override: the "format" verifier wants
    # <think>..</think><answer>..</answer>, which no scripted answer has
    overridden = held_out_eval(ENGINE, render, pool, RECORDS[:2], EvalPlan(max_new_tokens=8),
                               verifier="format")
    assert overridden["greedy/accuracy"] == 0.0
    assert all(isinstance(v, float) for v in metrics.values())


def test_settings_load_as_a_config_section_and_reject_nonsense(tmp_path):
    from rlvr.config import ConfigError, load_config

    path = tmp_path / "eval.yaml"
    path.write_text("n: 4\nks: [1, 4]\ntemperature: 0.6\n")
    settings = load_config(EvalSettings, path, ["max_new_tokens=64"])
    assert (settings.n, settings.ks, settings.max_new_tokens) == (4, (1, 4), 64)
    with pytest.raises(ConfigError, match="temperature"):
        load_config(EvalSettings, None, ["n=4", "temperature=0"])
    with pytest.raises(ConfigError, match="nothing to evaluate"):
        load_config(EvalSettings, None, ["greedy=false"])
    with pytest.raises(ValueError, match="ks"):
        evaluate(ENGINE, RECORDS, lambda r: r.prompt, EvalSettings(ks=(0,)))
