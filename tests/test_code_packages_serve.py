"""The sandbox's attacks under load (issue 21): through `rlvr serve`, while its workers
grade a steady stream of ordinary math and code items (numpy among them), every
hostile program of the sandbox suites - the reward hacks and containment attacks of
issue 15 and the numpy escapes - still scores 0, the ordinary items keep their right
verdicts, and nothing reaches the host.
"""

from __future__ import annotations

import http.server
import importlib.util
import random
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy
import pytest

from code_containment import pids_limited
from serve_helpers import Server
from test_code_hacks import SQUARE, VERDICT_ONLY_HACKS
from test_code_isolation import ALL_STORES, GUESS_ME, _learner
from test_code_packages import (SYSCALLS, _Answers, _memmap_attack, _network_attack,
                                _read_attack, _syscall_attack)

from benchmarks.tools.serve_cases import HOSTILE, code_case, math_case

NUMPY_TASK = {"test": "def check(candidate):\n    assert candidate([3, 1, 2]) == [1, 2, 3]\n"
                      "    assert candidate([]) == []\n", "entry_point": "ordered", "timeout": 4}
NUMPY_RIGHT = "import numpy as np\ndef ordered(xs):\n    return np.sort(np.array(xs, dtype=int))\n"
NUMPY_WRONG = "import numpy as np\ndef ordered(xs):\n    return np.array(xs, dtype=int)\n"


def _load_items(rng: random.Random, index: int) -> list[tuple[dict, bool]]:
    """One request of ordinary work: (line, whether it must pass)."""
    items = [(c.line, c.passed) for c in (math_case(rng, index * 8 + k) for k in range(4))]
    items += [(c.line, c.passed) for c in (code_case(index * 2 + k) for k in range(2))]
    items += [({"verifier": "code", "completion": NUMPY_RIGHT, "reference": NUMPY_TASK}, True),
              ({"verifier": "code", "completion": NUMPY_WRONG, "reference": NUMPY_TASK}, False)]
    return items


def _attacks(tmp_path: Path, url: str, marker: str) -> dict[str, tuple[str, dict]]:
    """name -> (completion, reference); every one must score 0."""
    answers = tmp_path / "answers.npy"
    numpy.save(answers, numpy.array([9, 4]))
    answers.chmod(0o644)
    targets = [str(tmp_path / marker), f"/usr/{marker}", f"/{marker}", f"/packages/{marker}"]
    attacks = {name: (code, SQUARE) for name, code in VERDICT_ONLY_HACKS.items()}
    attacks.update({f"bench_{name}": (code, SQUARE) for name, code in HOSTILE.items()})
    attacks.update({
        "numpy_syscalls": (_syscall_attack(list(SYSCALLS)), SQUARE),
        "numpy_memmap": (_memmap_attack(targets, "/packages/numpy/__init__.py"), SQUARE),
        "numpy_reads_host_files": (_read_attack(str(answers), str(answers),
                                                importlib.util.find_spec("torch").origin), SQUARE),
        "numpy_network": (_network_attack(url), SQUARE),
        "unlisted_torch": ("import torch\ndef square(x):\n    return x * x\n", SQUARE),
        "unlisted_rlvr": ("import rlvr\ndef square(x):\n    return x * x\n", SQUARE),
    })
    learner = _learner(f"rlvr-learn-{marker[-12:]}", ALL_STORES)
    attacks.update({f"learner_{i}": (learner, GUESS_ME) for i in range(8)})
    return attacks


@pytest.fixture(scope="module")
def loaded_server():
    with pids_limited():
        server = Server("--workers", "2", "--timeout", "30", "--preload", "code,math")
        yield server
        assert server.stop() == 0


def test_attacks_score_zero_while_the_server_grades_other_work(loaded_server, tmp_path):
    tmp_path.chmod(0o777)
    marker = f"rlvr-load-{uuid.uuid4().hex}"
    http_server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    threading.Thread(target=http_server.serve_forever, daemon=True).start()
    _Answers.requests.clear()
    url = f"http://127.0.0.1:{http_server.server_address[1]}/answers.txt"
    attacks = _attacks(tmp_path, url, marker)
    done = threading.Event()
    load_results: list[tuple[list[dict], list[bool]]] = []

    def load() -> None:  # ordinary work, request after request, until the attacks end
        rng, index = random.Random(0), 0
        while not done.is_set() or index < 2:
            items = _load_items(rng, index)
            answer = loaded_server.post("/verify", {"items": [line for line, _ in items]})
            assert answer.status_code == 200, answer.text
            load_results.append((answer.json()["verdicts"], [want for _, want in items]))
            index += 1

    def attack(name: str) -> tuple[str, dict]:
        code, reference = attacks[name]
        answer = loaded_server.post("/verify/one", {"verifier": "code", "completion": code,
                                                    "reference": reference})
        assert answer.status_code == 200, answer.text
        return name, answer.json()

    try:
        with ThreadPoolExecutor(6) as pool:
            loaders = [pool.submit(load) for _ in range(2)]
            verdicts = dict(pool.map(attack, list(attacks)))
            done.set()
            for loader in loaders:
                loader.result()
    finally:
        done.set()
        http_server.shutdown()
        http_server.server_close()
    learned = [n for n, v in verdicts.items() if n.startswith("learner_") and v["passed"]]
    assert len(learned) <= 2, f"{learned}: state carried across checks under load"
    broken = {n: v for n, v in verdicts.items()
              if not n.startswith("learner_") and (v["score"] != 0.0 or v["passed"])}
    assert not broken, broken
    assert "importable" in str(verdicts["unlisted_torch"]), verdicts["unlisted_torch"]
    assert _Answers.requests == [], "a sandboxed program reached the host's HTTP server"
    for path in [tmp_path / marker, Path("/usr") / marker, Path("/") / marker]:
        assert not path.exists(), f"{path} appeared on the host"
    # the ordinary work graded alongside kept its verdicts
    assert len(load_results) >= 2
    for got, wanted in load_results:
        assert [v["passed"] for v in got] == wanted, got
