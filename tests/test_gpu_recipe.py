"""benchmarks/tools/gpu_recipe.py without a GPU: its overrides make a valid config for the GSM8K
recipe (a typo must fail here, not after a GPU was booked), it picks rlvr's engine when
no vllm engine is registered, and it refuses to run (exit 3) without CUDA."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from rlvr.config import load_config
from rlvr.training.config import TrainConfig

from benchmarks.tools.gpu_recipe import NO_GPU_EXIT, recipe_overrides

REPO = Path(__file__).resolve().parents[1]
SCRIPT_ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}


def _args(**changes):
    values = dict(steps=60, prompts=64, max_new_tokens=512, lr=1e-6, eval_size=500,
                  every_s=120.0, overrides=[])
    values.update(changes)
    return argparse.Namespace(**values)


def test_recipe_overrides_load_on_the_gsm8k_config():
    cfg = load_config(TrainConfig, REPO / "configs" / "gsm8k.yaml",
                      recipe_overrides(_args(), "hf"))
    assert (cfg.model.device, cfg.model.dtype, cfg.sampling.engine) == ("cuda", "bfloat16", "hf")
    assert (cfg.sampling.prompts_per_step, cfg.sampling.group_size) == (64, 8)
    assert (cfg.sampling.max_new_tokens, cfg.data.eval_size, cfg.eval.every_s) == (512, 500, 120.0)
    assert cfg.data.default_verifier == "math" and cfg.steps == 60


def test_engine_is_vllm_only_when_registered_and_importable(monkeypatch):
    from benchmarks.tools import gpu_recipe
    from rlvr.rollout import factory

    monkeypatch.setattr(factory, "engine_names", lambda: ["hf"])
    assert gpu_recipe.pick_engine() == "hf"
    monkeypatch.setattr(factory, "engine_names", lambda: ["hf", "vllm"])
    monkeypatch.setattr(gpu_recipe.importlib.util, "find_spec", lambda name: None)
    assert gpu_recipe.pick_engine() == "hf"
    monkeypatch.setattr(gpu_recipe.importlib.util, "find_spec", lambda name: object())
    assert gpu_recipe.pick_engine() == "vllm"


def test_no_cuda_means_no_numbers():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA, so the recipe would run for real")
    done = subprocess.run([sys.executable, "-m", "benchmarks.tools.gpu_recipe"],
                          capture_output=True, text=True, cwd=REPO, env=SCRIPT_ENV)
    assert done.returncode == NO_GPU_EXIT
    assert "no CUDA device" in done.stderr and "gpu:" not in done.stdout


def test_vllm_recipe_overrides_load_on_the_gsm8k_config():
    """What gpu_recipe.py runs when vllm imports (benchmarks/tools/gpu_vllm.sh): a valid config
    whose vLLM engine syncs device to device and sleeps between generations on a GPU."""
    cfg = load_config(TrainConfig, REPO / "configs" / "gsm8k.yaml",
                      recipe_overrides(_args(), "vllm"))
    assert cfg.sampling.engine == "vllm" and cfg.sampling.vllm.mode == "colocate"
    from rlvr.rollout.vllm.engine import VLLMSettings, _sync_mode

    settings = VLLMSettings(**{k: getattr(cfg.sampling.vllm, k)
                               for k in ("mode", "sync", "sleep")})
    assert _sync_mode(settings, torch.device("cuda")) == "direct"
    assert _sync_mode(settings, torch.device("cpu")) == "file"


def test_gpu_vllm_script_without_cuda_measures_nothing():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA, so the script would run for real")
    done = subprocess.run(["bash", str(REPO / "benchmarks" / "tools" / "gpu_vllm.sh")],
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHON": sys.executable})
    assert done.returncode == NO_GPU_EXIT
    assert "no CUDA device" in done.stderr and "passed" not in done.stdout
