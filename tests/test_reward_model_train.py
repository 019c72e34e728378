"""`rlvr rm-train` on the tiny model and the `reward_model` verifier on its output.

The preference is learnable but invisible to token counts: the prompt is three random
letters and "=", the chosen completion copies the letters, the rejected one is three
other random letters. Chosen and rejected completions draw their tokens from the same
distribution, so an untrained head ranks them about at chance, and the reward, read at
the last token, must compare the completion with the prompt. Held-out pairs come from a
separate file."""

from __future__ import annotations

import json
import math
import random
import string

import pytest
import torch

from rlvr.cli.main import main
from rlvr.verifiers.registry import get_verifier
from rlvr.verifiers.reward_model.scoring import META_FILE


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(string.ascii_lowercase[:8]) for _ in range(3))


def _pairs(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        word, other = _word(rng), _word(rng)
        while other == word:
            other = _word(rng)
        rows.append({"prompt": f"{word}=", "chosen": word, "rejected": other})
    return rows


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One rm-train run on the tiny model: (run dir, its printed summary)."""
    root = tmp_path_factory.mktemp("rm")
    train = _write(root / "train.jsonl", _pairs(256, seed=1))
    held = _write(root / "held.jsonl", _pairs(64, seed=2))
    out = root / "run"
    import contextlib
    import io

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(["rm-train", f"data.path={train}", f"data.eval_path={held}",
                     "train.epochs=8", "train.batch_size=16", "train.lr=1e-3",
                     "train.max_length=64", "model.threads=1", "--quiet",
                     "--run-dir", str(out)])
    assert code == 0
    return out, json.loads(stdout.getvalue().strip().splitlines()[-1])


def test_rm_train_raises_held_out_pairwise_accuracy(trained):
    run, summary = trained
    before, after = summary["accuracy_before"], summary["accuracy_after"]
    # measured: 0.59 -> 1.0 (seed 0); chance is 0.5
    assert after >= 0.9, summary
    assert after - before >= 0.3, summary
    meta = json.loads((run / "model" / META_FILE).read_text())
    assert meta["prompt_style"] == "plain"  # the tiny tokenizer has no chat template
    assert meta["eval"]["after"]["accuracy"] == after and meta["stats"]["std"] > 0
    assert meta["train"]["steps"] == 8 * 256 // 16


def _independent_reward(model, tokenizer, text: str) -> float:
    """One unpadded sequence through a plainly loaded model: no rlvr scoring code."""
    ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        return float(model(**ids).logits[0, 0])


def test_saved_model_loads_and_ranks_chosen_first(trained):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    directory = trained[0] / "model"
    model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
    tokenizer = AutoTokenizer.from_pretrained(directory)
    assert model.config.num_labels == 1
    pair = _pairs(1, seed=3)[0]
    chosen = _independent_reward(model, tokenizer, "<s>" + pair["prompt"] + pair["chosen"])
    rejected = _independent_reward(model, tokenizer, "<s>" + pair["prompt"] + pair["rejected"])
    assert chosen > rejected


def test_verifier_scores_match_an_independent_forward(trained):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    directory = str(trained[0] / "model")
    model = AutoModelForSequenceClassification.from_pretrained(directory).eval()
    tokenizer = AutoTokenizer.from_pretrained(directory)
    rows = _pairs(4, seed=4)
    # lengths differ, so the batch is padded: padding must not change a reward
    prompts = [r["prompt"] for r in rows] + ["abc=", "7+5="]
    completions = [r["chosen"] for r in rows] + ["abcabcabc", "12"]
    verifier = get_verifier("reward_model", model=directory, batch_size=8)
    verdicts = verifier.verify_batch(completions, prompts)
    for prompt, completion, verdict in zip(prompts, completions, verdicts):
        raw = _independent_reward(model, tokenizer, "<s>" + prompt + completion)
        assert verdict.details["raw"] == pytest.approx(raw, abs=1e-4)
        assert verdict.reason == "scored"
        # the sigmoid of the verdict's own raw reward, exactly; against the independent
        # forward pass only within the raw reward's slack (sigmoid' <= 1/4 keeps it)
        # (in float64: a float32 tensor's exp is itself off by ~1e-7 relative)
        own = verdict.details["raw"]
        assert verdict.score == pytest.approx(1 / (1 + math.exp(-own)), rel=1e-12)
        assert verdict.score == pytest.approx(1 / (1 + math.exp(-raw)), abs=1e-4)
        assert verdict.passed == (verdict.score >= 0.5)
    one = verifier.verify(completions[0], None, prompt=prompts[0])
    assert one.details["raw"] == pytest.approx(verdicts[0].details["raw"], abs=1e-4)


def test_standard_normalisation_uses_the_saved_statistics(trained):
    directory = str(trained[0] / "model")
    stats = json.loads((trained[0] / "model" / META_FILE).read_text())["stats"]
    verifier = get_verifier("reward_model", model=directory, normalization="standard",
                            pass_threshold=0.9)
    verdict = verifier.verify("abd", None, prompt="abc=")
    z = (verdict.details["raw"] - stats["mean"]) / stats["std"]
    assert verdict.details["normalised"] == pytest.approx(z)
    assert verdict.passed == (verdict.score >= 0.9)


def test_bad_rows_fail_before_any_model_loads(tmp_path, capsys, monkeypatch):
    import rlvr.training.reward_model as rm

    def no_model(*_):
        raise AssertionError("a model was loaded for bad data")

    monkeypatch.setattr(rm, "load_reward_backbone", no_model)
    path = _write(tmp_path / "pairs.jsonl", _pairs(3, seed=0) + [{"prompt": "x", "chosen": "a"}])
    code = main(["rm-train", f"data.path={path}", "--quiet",
                 "--run-dir", str(tmp_path / "run")])
    assert code == 2
    assert f"{path}:4: field 'rejected' is missing" in capsys.readouterr().err
    assert main(["rm-train", "--quiet"]) == 2  # no data.path
    assert "data.path" in capsys.readouterr().err


def test_rlvr_verify_loads_the_model_in_its_worker(trained, capsys):
    """The pool path: a worker process loads the model itself and scores the same."""
    directory = str(trained[0] / "model")
    code = main(["verify", "reward_model", "--options", json.dumps({"model": directory}),
                 "--reference", "", "--prompt", "abc=", "--completion", "abc"])
    assert code == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    direct = get_verifier("reward_model", model=directory).verify("abc", None,
                                                                prompt="abc=")
    assert line["reason"] == "scored"
    assert line["details"]["raw"] == pytest.approx(direct.details["raw"], abs=1e-4)


def test_rlvr_train_scores_with_the_reward_model_in_process(trained, tmp_path, monkeypatch):
    """reward.verifier=reward_model: every step's completions are scored in the trainer's
    process, batched, on the policy's device; none go to the worker processes."""
    from train_helpers import tiny_config

    from rlvr.training.run import train
    from rlvr.verifiers.reward_model.verifier import RewardModelVerifier

    calls = []
    real = RewardModelVerifier.verify_batch

    def spy(self, completions, prompts):
        calls.append((len(completions), self.options.device))
        return real(self, completions, prompts)

    monkeypatch.setattr(RewardModelVerifier, "verify_batch", spy)
    directory = str(trained[0] / "model")
    train(tiny_config("steps=2", "checkpoint_every=0", "reward.verifier=reward_model",
                      f"reward.options.model={directory}"), tmp_path / "run")
    lines = [json.loads(line) for line in
             (tmp_path / "run" / "rollouts.jsonl").read_text().splitlines()]
    assert len(lines) == 2 * 4 * 2  # steps x prompts x samples
    assert all(line["verdict"]["reason"] == "scored" for line in lines)
    # the reward tensor is float32
    assert all(line["reward"] == pytest.approx(line["verdict"]["score"], abs=1e-6)
               for line in lines)
    # a step's 8 completions in one call, on the policy's device
    assert (8, "cpu") in calls and all(device == "cpu" for _, device in calls)


def test_without_eval_path_whole_prompts_are_held_out(tmp_path, capsys):
    rows = [dict(r, prompt=f"{i % 20:02d}=") for i, r in enumerate(_pairs(100, seed=5))]
    path = _write(tmp_path / "pairs.jsonl", rows)
    code = main(["rm-train", f"data.path={path}", "data.eval_fraction=0.2",
                 "train.max_steps=2", "train.max_length=32", "model.threads=1", "--quiet",
                 "--run-dir", str(tmp_path / "run")])
    assert code == 0
    meta = json.loads((tmp_path / "run" / "model" / META_FILE).read_text())
    held, trained_pairs = meta["eval"]["after"]["pairs"], meta["train"]["pairs"]
    assert held + trained_pairs == 100 and held % 5 == 0 and 20 <= held <= 25
    assert meta["train"]["steps"] == 2
