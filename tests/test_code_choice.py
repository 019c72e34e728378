"""Code is chosen by the operator, never by data: an import path named by a `rlvr verify`
input line, a training data row or an adapter's dataset column is refused, naming the
place and the field, before anything is graded (a marker file that the attack's command
would create stays absent); a plugin the operator lists works, in worker processes too.

The attack is the one that worked before: {"verifier": "os:system", "options":
{"command": "touch MARKER"}} made a worker call os.system(command=...)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from cli_helpers import run_cli
from rlvr.verifiers import Case, VerifierPool, registry
from train_helpers import TINY_OVERRIDES

TESTS = Path(__file__).resolve().parent
PLUGIN = "pool_fixtures:Behaving"  # score = float(completion); details hold the worker pid


def _attack(marker: Path) -> dict:
    return {"verifier": "os:system", "completion": "", "reference": "",
            "options": {"command": f"touch {marker}"}}


def _write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


@pytest.fixture
def own_plugins():
    """Plugins this test installs in the pytest process are removed afterwards, so other
    tests see the registry as the operator left it."""
    before = dict(registry._PLUGINS)
    yield
    registry._PLUGINS.clear()
    registry._PLUGINS.update(before)


# -- rlvr verify --input ---------------------------------------------------------------


def test_verify_refuses_an_import_path_line_before_grading_anything(tmp_path):
    marker = tmp_path / "pwned"
    cases = _write_jsonl(tmp_path / "cases.jsonl", [
        {"verifier": "exact", "completion": "#### 1", "reference": "1"}, _attack(marker)])
    out = tmp_path / "verdicts.jsonl"
    result = run_cli("verify", "--input", str(cases), "--output", str(out), "--workers", "1")
    assert result.returncode == 2, result.stderr
    assert f"{cases}:2: field 'verifier': verifier 'os:system' is an import path" \
        in result.stderr
    assert not marker.exists()
    assert not out.exists()  # refused before grading: not even line 1 was graded


def test_verify_refuses_a_composite_component_that_names_code(tmp_path):
    marker = tmp_path / "pwned"
    line = {"verifier": "composite", "completion": "", "reference": "",
            "options": {"components": [{"verifier": "exact"},
                                       {"verifier": "os:system",
                                        "options": {"command": f"touch {marker}"}}]}}
    cases = _write_jsonl(tmp_path / "cases.jsonl", [line])
    result = run_cli("verify", "--input", str(cases))
    assert result.returncode == 2
    assert f"{cases}:1: field 'options.components[1].verifier'" in result.stderr
    assert not marker.exists()


def test_verify_refuses_operator_options_in_a_line(tmp_path):
    marker = tmp_path / "written-by-the-completion"
    program = f"open({str(marker)!r}, 'w').write('x')\ndef f():\n    return 1\n"
    line = {"verifier": "code", "completion": program, "reference": {"asserts": ["assert f() == 1"]},
            "options": {"sandbox": "none-unsafe"}}
    cases = _write_jsonl(tmp_path / "cases.jsonl", [line])
    result = run_cli("verify", "--input", str(cases))
    assert result.returncode == 2
    assert f"{cases}:1: field 'options.sandbox': option 'sandbox' of verifier 'code' is set " \
           "by the operator only" in result.stderr
    assert not marker.exists()


def test_verify_grades_a_plugin_the_operator_lists_in_worker_processes(tmp_path):
    cases = _write_jsonl(tmp_path / "cases.jsonl", [
        {"verifier": PLUGIN, "completion": "0.25", "reference": None},
        {"verifier": PLUGIN, "completion": "1", "reference": None}])
    refused = run_cli("verify", "--input", str(cases), cwd=TESTS)
    assert refused.returncode == 2 and f"'{PLUGIN}' is an import path" in refused.stderr
    result = run_cli("verify", "--input", str(cases), "--workers", "2", "--plugin", PLUGIN,
                     cwd=TESTS)
    assert result.returncode == 0, result.stderr
    lines = [json.loads(x) for x in result.stdout.splitlines()]
    assert [(x["score"], x["passed"]) for x in lines] == [(0.25, False), (1.0, True)]


def test_plugin_reaches_pool_workers_that_never_saw_add_plugins(own_plugins):
    with VerifierPool(workers=2, plugins=[PLUGIN]) as pool:
        verdicts = pool.verify([Case(PLUGIN, "0.5", None) for _ in range(6)])
    assert [v.score for v in verdicts] == [0.5] * 6
    assert os.getpid() not in {v.details["pid"] for v in verdicts}  # graded in workers


def test_a_pool_refuses_an_unlisted_import_path_as_an_invalid_item(tmp_path, own_plugins):
    marker = tmp_path / "pwned"
    with VerifierPool(workers=1) as pool:
        [verdict] = pool.verify([Case("os:system", "", "", {"command": f"touch {marker}"})])
    assert verdict.is_invalid and "'os:system' is an import path" in verdict.details["error"]
    assert not marker.exists()


# -- a training data file -------------------------------------------------------------


def test_train_refuses_a_data_file_row_that_names_code_before_the_model_loads(tmp_path):
    marker = tmp_path / "pwned"
    data = _write_jsonl(tmp_path / "train.jsonl", [
        {"prompt": "1+1=", "reference": "2", "verifier": "exact"},
        {"prompt": "2+2=", "reference": "4", "verifier": "os:system",
         "options": {"command": f"touch {marker}"}}])
    run_dir = tmp_path / "run"
    start = time.monotonic()
    result = run_cli("train", "--run-dir", str(run_dir), *TINY_OVERRIDES, "steps=1",
                     f"data.path={data}", timeout=240)
    assert result.returncode != 0
    assert f"{data}:2: field 'verifier': verifier 'os:system' is an import path" \
        in result.stderr, result.stderr[-2000:]
    # the data loads before the run directory is made and before the model: neither exists
    assert not run_dir.exists()
    assert not marker.exists()
    assert "Traceback" not in result.stderr
    assert time.monotonic() - start < 120


def test_load_records_accepts_a_plugin_only_once_the_operator_lists_it(tmp_path, own_plugins):
    from rlvr.data import DataError, load_records

    registry._PLUGINS.pop(PLUGIN, None)  # another test in this process may have listed it
    data = _write_jsonl(tmp_path / "t.jsonl", [
        {"prompt": "p", "reference": None, "verifier": PLUGIN}])
    with pytest.raises(DataError, match=r"t\.jsonl:1: field 'verifier': .*is an import path"):
        load_records(data, check=False)  # names are checked even without reference checks
    registry.add_plugins([PLUGIN])
    [record] = load_records(data)
    assert record.verifier == PLUGIN


# -- adapters ---------------------------------------------------------------------------


def test_trl_verifier_column_never_names_code(tmp_path):
    from rlvr.adapters.trl import reward_func

    marker = tmp_path / "pwned"
    function = reward_func(None, options={"command": f"touch {marker}"})
    with pytest.raises(ValueError, match=r"rlvr_verifier: row 0: field 'verifier': "
                                         r"verifier 'os:system' is an import path"):
        function(prompts=["a", "b"], completions=["", "#### 1"], reference=["", "1"],
                 verifier=["os:system", "exact"])
    assert not marker.exists()


def test_verl_data_source_and_extra_info_never_name_code(tmp_path):
    from rlvr.adapters.verl import compute_score, compute_score_batch

    with pytest.raises(ValueError, match=r"field 'data_source': verifier 'os:system' is an "
                                         "import path"):
        compute_score("os:system", "", "")
    with pytest.raises(ValueError, match=r"field \"extra_info\['verifier'\]\": verifier "
                                         "'os:system' is an import path"):
        compute_score_batch(["openai/gsm8k"], ["#### 1"], ["1"], [{"verifier": "os:system"}])
    # the same rows with built-in names grade (the refusal is about code, not the rows)
    assert compute_score("openai/gsm8k", "#### 1", "1")["score"] == 1.0
    assert compute_score_batch(["x"], ["#### 1"], ["1"], [{"verifier": "exact"}])[0]["acc"] == 1.0


def test_openrlhf_labels_never_name_code_or_operator_options(tmp_path):
    from rlvr.adapters.openrlhf import make_reward_func

    marker = tmp_path / "pwned"
    reward = make_reward_func("exact")
    label = json.dumps(_attack(marker) | {"reference": "1"})
    with pytest.raises(ValueError, match=r"item 1: label: field 'verifier': verifier "
                                         "'os:system' is an import path"):
        reward(["Q1 #### 1", "Q2 x"], ["Q1", "Q2"], ["1", label])
    unsafe = json.dumps({"verifier": "code", "reference": {"asserts": ["assert True"]},
                         "options": {"sandbox": "none-unsafe"}})
    with pytest.raises(ValueError, match=r"item 0: label: field 'options.sandbox'"):
        reward(["Q1 pass"], ["Q1"], [unsafe])
    assert not marker.exists()
    graded = reward(["Q1 #### 1"], ["Q1"], [json.dumps({"verifier": "exact", "reference": "1"})])
    assert graded["rewards"].tolist() == [1.0]


# -- the operator's options -----------------------------------------------------------


def test_operator_options_fill_in_what_a_case_leaves_out_inside_composites():
    from rlvr.verifiers.untrusted import OperatorPolicy

    policy = OperatorPolicy({"judge": {"base_url": "http://judge:8000/v1", "model": "m"},
                             "math": {"fallback": "last_number", "answer_form": "value"}})
    case = policy.admit(Case("composite", "x", "1", {"components": [
        {"verifier": "judge", "weight": 0.5},
        {"verifier": "math", "options": {"answer_form": "expression"}}]}), "items[0]")
    judge, math = case.options["components"]
    assert judge == {"verifier": "judge", "weight": 0.5,
                     "options": {"base_url": "http://judge:8000/v1", "model": "m"}}
    # a grading option the case sets wins; the operator's others stay
    assert math["options"] == {"fallback": "last_number", "answer_form": "expression"}


def test_remote_backend_refuses_operator_options_when_the_config_loads():
    from rlvr.config import ConfigError
    from train_helpers import tiny_config

    remote = ("reward.backend=remote", "reward.remote_urls=[http://127.0.0.1:9]")
    with pytest.raises(ConfigError, match=r"reward\.options\.base_url: .*option 'base_url' of "
                                          "verifier 'judge' is set by the operator only"):
        tiny_config(*remote, "reward.verifier=judge", "reward.options={base_url: http://x/v1}")
    assert tiny_config(*remote, "reward.verifier=math",
                       "reward.options={answer_form: value}").reward.options == {
        "answer_form": "value"}
