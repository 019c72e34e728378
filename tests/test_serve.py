"""`rlvr serve`: the same verdicts over HTTP as `rlvr verify` writes, auth, bad input
named, metrics. One server (token set) serves the whole module."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from cli_helpers import run_cli
from serve_helpers import Server, contract_lines

TOKEN = "t0ken-for-tests"
SQUARE = {"test": "def check(candidate):\n    assert candidate(3) == 9\n"
                  "    assert candidate(-2) == 4\n", "entry_point": "square", "timeout": 2}

# Cases no data file has: other verifiers, invalid references and inputs, hostile code.
ADVERSARIAL = [
    {"verifier": "exact", "completion": "Answer: 19", "reference": "19"},
    {"verifier": "exact", "completion": "1,000", "reference": "1000"},
    {"verifier": "exact", "completion": "1", "reference": {"bad": 1}},
    {"verifier": "nope", "completion": "1", "reference": "1"},
    {"completion": "1", "reference": "1"},
    ["not", "an", "object"],
    {"verifier": "exact", "completion": "1", "reference": "1", "options": [1]},
    {"verifier": "math", "completion": 7, "reference": "7"},
    {"verifier": "format", "completion": "<think>x</think><answer>4</answer>", "reference": ""},
    {"verifier": "r1_math", "completion": "<think>2+2</think><answer>\\boxed{4}</answer>",
     "reference": "4"},
    {"verifier": "math", "completion": "\\boxed{9^{9^{9^{9^{9}}}}}", "reference": "1"},
    {"verifier": "code", "completion": "def square(x):\n    return x * x\n", "reference": SQUARE},
    {"verifier": "code", "completion": "def square(x):\n    return x + x\n", "reference": SQUARE},
    {"verifier": "code", "completion": "def square(x):\n    while True:\n        pass\n",
     "reference": SQUARE},
    {"verifier": "code", "completion": "def square(x):\n    hog = bytearray(16 * 1024 ** 3)\n"
     "    return x * x\n", "reference": SQUARE},
    {"verifier": "code", "completion": "import os\ndef square(x):\n    return 0\nos._exit(0)\n",
     "reference": SQUARE},
    {"verifier": "code", "completion": "def square(x):\n    return 1\n",
     "reference": {"entry_point": "square"}},
]


@pytest.fixture(scope="module")
def server():
    srv = Server("--workers", "2", "--timeout", "30", "--max-body-mb", "1", token=TOKEN)
    yield srv
    assert srv.stop() == 0


def _without_where(line: dict, prefix: str) -> dict:
    """An error line with its location prefix ("cases.jsonl:3: " / "items[2]: ") cut."""
    if "error" not in line:
        return line
    assert line["error"].startswith(prefix), (line["error"], prefix)
    return {**line, "error": line["error"][len(prefix):]}


def test_same_verdicts_as_rlvr_verify_over_16_concurrent_requests(server, tmp_path):
    cases = (contract_lines("math_labelled.jsonl", "redteam_math_hacks.jsonl")
             + contract_lines("math_recall.jsonl", every=4) + ADVERSARIAL)
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    result = run_cli("verify", "--input", str(path), "--workers", "2", "--timeout", "30")
    assert result.returncode == 1, result.stderr  # the invalid lines are in there
    expected = [json.loads(x) for x in result.stdout.splitlines()]
    assert len(expected) == len(cases)

    size = -(-len(cases) // 16)
    chunks = [list(range(i, min(i + size, len(cases)))) for i in range(0, len(cases), size)]
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(
            lambda idx: server.post("/verify", {"items": [cases[i] for i in idx]}, 300), chunks))
    got: list[dict] = [{}] * len(cases)
    for idx, answer in zip(chunks, answers):
        assert answer.status_code == 200, answer.text
        verdicts = answer.json()["verdicts"]
        assert len(verdicts) == len(idx)
        for position, (i, line) in enumerate(zip(idx, verdicts)):
            got[i] = _without_where(line, f"items[{position}]: ")
    for i, (want, have) in enumerate(zip(expected, got)):
        assert have == _without_where(want, f"{path}:{i + 1}: "), (i, cases[i])
    # the hostile code scored 0 and the honest one 1, on both sides
    scores = [line["score"] for line in got[-6:]]
    assert scores[0] == 1.0 and scores[1:5] == [0.0] * 4


def test_source_names_errors_as_rlvr_verify_does(server, tmp_path):
    cases = ADVERSARIAL[:8]
    path = tmp_path / "small.jsonl"
    path.write_text("".join(json.dumps(c) + "\n" for c in cases))
    expected = run_cli("verify", "--input", str(path), "--workers", "1").stdout
    answer = server.post("/verify", {"items": cases, "source": str(path)})
    assert answer.status_code == 200
    lines = "".join(json.dumps(v, ensure_ascii=False) + "\n" for v in answer.json()["verdicts"])
    assert lines == expected  # byte for byte


def test_one_case_endpoint_and_empty_batch(server):
    one = server.post("/verify/one", {"verifier": "math", "completion": "so \\boxed{0.5}",
                                      "reference": "\\frac12"})
    assert one.status_code == 200 and one.json()["passed"] is True
    empty = server.post("/verify", {"items": []})
    assert empty.status_code == 200 and empty.json() == {"verdicts": []}


def test_token_required_except_for_health(server):
    case = {"verifier": "exact", "completion": "1", "reference": "1"}
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": TOKEN}):
        answer = httpx.post(server.url + "/verify", json={"items": [case]}, headers=headers)
        assert answer.status_code == 401 and answer.headers["www-authenticate"] == "Bearer"
    assert httpx.get(server.url + "/metrics").status_code == 401
    assert httpx.get(server.url + "/health").json()["status"] == "ok"
    assert server.post("/verify", {"items": [case]}).json()["verdicts"][0]["score"] == 1.0


@pytest.mark.parametrize("body, field, item", [
    ('{"items": [', None, None),
    ('[1, 2]', "items", None),
    ('{"items": {"verifier": "math"}}', "items", None),
    ('{"items": [], "deadline_s": -1}', "deadline_s", None),
    ('{"strict": true, "items": [{"verifier": "exact", "completion": "1", "reference": "1"},'
     ' {"verifier": "exact", "completion": "1"}]}', "items[1].reference", 1),
    ('{"strict": true, "items": [{"verifier": "exact", "completion": "1", "reference": "1",'
     ' "options": 3}]}', "items[0].options", 0),
])
def test_bad_requests_are_400_naming_the_field(server, body, field, item):
    answer = httpx.post(server.url + "/verify", content=body, headers=server.headers())
    assert answer.status_code == 400
    payload = answer.json()
    assert payload.get("field") == field and payload.get("item") == item
    if field is None:
        assert "malformed JSON" in payload["error"]


def test_one_case_endpoint_names_the_bad_field(server):
    answer = server.post("/verify/one", {"verifier": "exact", "reference": "1"})
    assert answer.status_code == 400 and answer.json()["field"] == "completion"


def test_too_large_a_body_is_413(server):
    answer = httpx.post(server.url + "/verify", content=b" " * (2 * 1024 * 1024),
                        headers=server.headers(), timeout=60)
    assert answer.status_code == 413


def test_metrics_count_requests_and_give_percentiles(server):
    before = httpx.get(server.url + "/metrics", headers=server.headers()).json()
    server.post("/verify", {"items": [{"verifier": "exact", "completion": "2",
                                       "reference": "2"}] * 3})
    after = httpx.get(server.url + "/metrics", headers=server.headers()).json()
    assert after["verdicts"] == before["verdicts"] + 3
    assert after["requests"]["200"] == before["requests"].get("200", 0) + 1
    assert after["queue"]["workers"] == 2 and after["queue"]["admitted"] == 0
    assert after["latency_ms"]["p50"] <= after["latency_ms"]["p99"] <= after["latency_ms"]["max"]
    text = httpx.get(server.url + "/metrics?format=prometheus", headers=server.headers()).text
    assert f'rlvr_serve_verdicts_total {after["verdicts"]}' in text
