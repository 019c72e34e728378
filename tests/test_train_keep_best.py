"""eval.keep_best: a tiny run whose held-out accuracy (scripted through the evaluate
seam the run calls) goes up then down keeps the best step's weights in
checkpoints/best; summary.json names it; `rlvr eval RUN --best` evaluates it; a resume
continues from the latest checkpoint, never the best."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from safetensors.torch import load_file

import rlvr.training.run as run_module
import rlvr.training.evaluate as evaluate_module
from rlvr.cli.main import main
from rlvr.config import ConfigError
from rlvr.evaluation.model_source import ModelSourceError, latest_checkpoint, resolve
from rlvr.training.checkpoint import latest_checkpoint as resume_point
from rlvr.training.run import train
from train_helpers import interrupt_at, plugin_reward, tiny_config


@pytest.fixture(autouse=True)
def length_reward(monkeypatch):
    """A reward an untrained model earns unevenly, so every step moves the weights (its
    workers import it by path: the tests dir goes on their PYTHONPATH)."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(Path(__file__).parent),
                                                      os.environ.get("PYTHONPATH", "")]))


@pytest.fixture
def scripted(monkeypatch):
    """Held-out accuracies in evaluation order: the real evaluation runs, then its
    accuracy is replaced by the next scripted one (as if the model had scored it)."""
    script: list[float] = []
    real = evaluate_module.evaluate  # what the run's held-out evaluator calls

    def evaluate(*args, **kwargs):
        result = real(*args, **kwargs)
        result["accuracy"] = result["row"]["greedy/accuracy"] = script.pop(0)
        return result

    monkeypatch.setattr(evaluate_module, "evaluate", evaluate)
    return script


BEST = ["eval.keep_best=true", "eval.every=1", "checkpoint_every=1", "keep_checkpoints=0",
        "data.eval_size=2", *plugin_reward("train_helpers:LengthVerifier")]


def _weights(checkpoint):
    return load_file(str(checkpoint / "model.safetensors"))


def _same(a, b):
    return a.keys() == b.keys() and all(bool((a[k] == b[k]).all()) for k in a)


def test_keeps_the_best_step_and_eval_best_picks_it(tmp_path, scripted, capsys):
    scripted += [0.2, 0.5, 0.8, 0.4, 0.3]  # steps 0 (before), 1, 2, 3, 4 (after)
    summary = train(tiny_config("steps=4", *BEST), tmp_path / "r")
    checkpoints = tmp_path / "r" / "checkpoints"
    assert summary["best"] == {"step": 2, "accuracy": 0.8,
                               "checkpoint": str(checkpoints / "best")}
    assert json.loads((checkpoints / "best" / "best.json").read_text()) == {
        "step": 2, "accuracy": 0.8}
    best = _weights(checkpoints / "best")
    assert _same(best, _weights(checkpoints / "step-000002"))
    assert not _same(best, _weights(checkpoints / "step-000004"))  # the latest moved on
    # the latest is still the latest, for resuming and for `rlvr eval RUN`
    assert resume_point(checkpoints).name == "step-000004"
    assert latest_checkpoint(tmp_path / "r").name == "step-000004"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"prompt": "1+1=", "reference": "2", "verifier": "exact"})
                     + "\n")
    code = main(["eval", str(tmp_path / "r"), "--best", "--dataset", str(tasks),
                 "--max-new-tokens", "4", "--workers", "1", "--quiet"])
    assert code == 0
    result = json.loads((tmp_path / "r" / "eval" / "tasks-best.json").read_text())
    assert result["config"]["model"] == f"hf:{checkpoints / 'best'}"


def test_resume_continues_from_the_latest_not_the_best(tmp_path, scripted, monkeypatch):
    scripted += [0.2, 0.9, 0.4, 0.3]  # steps 0, 1, 2, 3 (after)
    train(tiny_config("steps=3", *BEST), tmp_path / "r")
    loaded = []
    real_load = run_module.load_policy
    monkeypatch.setattr(run_module, "load_policy",
                        lambda model, seed, checkpoint=None:
                        loaded.append(checkpoint) or real_load(model, seed, checkpoint))
    scripted += [0.5, 0.6]  # steps 4, 5 (after)
    summary = train(tiny_config("steps=5", *BEST), tmp_path / "r", resume=True)
    assert loaded == [tmp_path / "r" / "checkpoints" / "step-000003"]
    lines = (tmp_path / "r" / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line)["step"] for line in lines] == [1, 2, 3, 4, 5]
    assert summary["best"]["step"] == 1 and summary["best"]["accuracy"] == 0.9
    # the collapse watch resumed too: it replayed the kept logs, so step 2's drop from
    # 0.9 is still known (and 0.5, 0.6 at steps 4, 5 stay under it: no new warning)
    drops = [(w["step"], w["best"]) for w in summary["collapse_warnings"]
             if w["signal"] == "held_out_drop"]
    assert drops == [(2, 0.9)]


def test_a_best_past_the_resume_point_is_dropped(tmp_path, scripted, monkeypatch):
    scripted += [0.2, 0.3, 0.4, 0.9]  # steps 0-3; step 3 is the best, then a kill
    cfg = tiny_config("steps=4", *BEST[:2], "checkpoint_every=2", *BEST[3:])
    real_step = run_module.rl_step
    monkeypatch.setattr(run_module, "rl_step", interrupt_at(4))
    with pytest.raises(KeyboardInterrupt):
        train(cfg, tmp_path / "r")
    checkpoints = tmp_path / "r" / "checkpoints"
    assert json.loads((checkpoints / "best" / "best.json").read_text())["step"] == 3
    monkeypatch.setattr(run_module, "rl_step", real_step)
    scripted += [0.6, 0.5]  # the resumed steps 3 and 4 (after)
    summary = train(cfg, tmp_path / "r", resume=True)  # from step 2
    # step 3's weights of the killed run are gone with its logs: the best is re-found
    assert summary["best"]["step"] == 3 and summary["best"]["accuracy"] == 0.6


def test_keep_best_needs_held_out_data(tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps({"prompt": "1+1=", "reference": "2"}) + "\n")
    cfg = tiny_config(f"data.path={data}", "eval.keep_best=true")
    with pytest.raises(ConfigError, match="eval.keep_best: needs held-out data"):
        train(cfg, tmp_path / "r")
    assert not (tmp_path / "r").exists()  # refused before the run directory


def test_eval_best_without_a_kept_best_is_named(tmp_path):
    (tmp_path / "r" / "checkpoints" / "step-000001").mkdir(parents=True)
    (tmp_path / "r" / "checkpoints" / "step-000001" / "config.json").write_text("{}")
    with pytest.raises(ModelSourceError, match="kept no best checkpoint.*keep_best=true"):
        resolve(tmp_path / "r", best=True)
    (tmp_path / "r" / "checkpoints" / "best").mkdir()
    (tmp_path / "r" / "checkpoints" / "best" / "config.json").write_text("{}")
    # a best is never the latest, even with a higher-sorting name
    assert latest_checkpoint(tmp_path / "r").name == "step-000001"
