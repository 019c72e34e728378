"""numpy checks that mean what they say: an empty answer (`return []`, `np.array([])`,
`np.zeros((0,))`) scores 0 on numpy-based checks and its honest twin 1, through the real
sandbox: on the checks rlvr ships (examples/code_numpy_checks.jsonl, written with
shape-checking comparisons) whatever the option, and on checks written the lenient way
(`np.allclose(f(x), 2.0)`, as broadcasting lets `[]` through) because the trusted judge
makes numpy's comparisons shape-strict (`strict_numeric`, on by default)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from cli_helpers import SRC
from rlvr.verifiers.code import CodeVerifier
from rlvr.verifiers.registry import spec_for

SHIPPED = Path(__file__).resolve().parents[1] / "examples" / "code_numpy_checks.jsonl"
EMPTY_BODIES = ("return []", "return np.array([])", "return np.zeros((0,))")


def _empties(name: str, args: str) -> list[str]:
    return [f"import numpy as np\n\ndef {name}({args}):\n    {body}\n" for body in EMPTY_BODIES]


# Checks as a dataset author writes them without thinking of shapes (the red team's).
LENIENT_MEAN = {"entry_point": "mean", "test": "import numpy as np\n\ndef check(candidate):\n"
                "    assert np.allclose(candidate([1.0, 2.0, 6.0]), 3.0)\n"
                "    assert np.allclose(candidate([4.0]), [4.0])\n"}
LENIENT_DET = {"entry_point": "det2", "test": "import numpy as np\n\ndef check(candidate):\n"
               "    assert np.all(np.isclose(candidate([[1, 2], [3, 4]]), -2.0))\n"
               "    np.testing.assert_allclose(candidate([[2, 0], [0, 3]]), 6.0)\n"}
LENIENT_MBPP = {"setup": "import numpy as np\nfrom numpy.testing import assert_array_almost_equal",
                "asserts": ["assert np.allclose(norm([3, 4]), 5.0)",
                            "assert np.all(np.isclose(norm([6, 8]), [10.0]))",
                            "assert_array_almost_equal(norm([0, 2]), 2.0)",
                            "np.testing.assert_equal(np.array(norm([5, 12])), 13.0)",
                            "assert np.array_equiv(norm([0, 7]), 7.0)"]}
LENIENT = [
    (LENIENT_MEAN, "def mean(xs):\n    return sum(xs) / len(xs)\n", _empties("mean", "xs")),
    (LENIENT_DET, "def det2(m):\n    return m[0][0] * m[1][1] - m[0][1] * m[1][0]\n",
     _empties("det2", "m")),
    (LENIENT_MBPP, "import math\n\ndef norm(v):\n    return math.hypot(*v)\n",
     _empties("norm", "v")),
]


@pytest.fixture(scope="module")
def strict():
    verifier = CodeVerifier()
    yield verifier
    verifier.close()


@pytest.fixture(scope="module")
def lenient():
    verifier = CodeVerifier(strict_numeric=False)
    yield verifier
    verifier.close()


def _shipped() -> list[dict]:
    return [json.loads(line) for line in SHIPPED.read_text().splitlines()]


def test_shipped_checks_refuse_empty_answers_and_pay_honest_ones(strict, lenient):
    cases = _shipped()
    # one honest answer, then its three empty twins, per check (mean, determinant, MBPP)
    assert len(cases) == 12 and all("def " in c["completion"] for c in cases)
    for verifier in (strict, lenient):  # written to check shapes: right without the option
        scores = [verifier.verify(c["completion"], c["reference"]).score for c in cases]
        assert scores == [1.0, 0.0, 0.0, 0.0] * 3, (verifier.strict_numeric, scores)


def test_strict_numeric_refuses_empty_answers_on_lenient_checks(strict, lenient):
    for reference, honest, empties in LENIENT:
        assert strict.verify(honest, reference).score == 1.0, reference
        for empty in empties:
            verdict = strict.verify(empty, reference)
            assert verdict.score == 0.0, (empty, reference, verdict)
        # the hole the option closes: without it numpy broadcasts [] and every check holds
        assert [lenient.verify(e, reference).score for e in empties] == [1.0] * 3, reference


def test_wrong_shapes_are_refused_and_scalars_still_broadcast_elementwise(strict):
    shapes = {"entry_point": "f", "test": "import numpy as np\n\ndef check(candidate):\n"
              "    assert np.allclose(candidate(2), [2.0, 2.0])\n"}
    assert strict.verify("def f(n):\n    return [2.0] * n\n", shapes).score == 1.0
    assert strict.verify("def f(n):\n    return 2.0\n", shapes).score == 0.0  # () vs (2,)
    assert strict.verify("def f(n):\n    return [2.0] * (n + 1)\n", shapes).score == 0.0
    # a dimension of length 1 is not a different arrangement
    assert strict.verify("def f(n):\n    return [[2.0] * n]\n", shapes).score == 1.0
    # isclose against a scalar: the "every element is c" idiom keeps working
    zeros = {"entry_point": "f", "test": "import numpy as np\n\ndef check(candidate):\n"
             "    assert np.all(np.isclose(candidate(3), 0.0))\n"}
    assert strict.verify("def f(n):\n    return [0.0] * n\n", zeros).score == 1.0
    assert strict.verify("def f(n):\n    return []\n", zeros).score == 0.0


def test_the_candidate_cannot_undo_it(strict):
    """The model's code runs in its own sandbox; what it does to numpy stays there."""
    code = ("import numpy as np\nimport numpy.testing\n"
            "np.allclose = np.isclose = lambda *a, **k: True\n"
            "np.testing.assert_allclose = lambda *a, **k: None\n"
            "def mean(xs):\n    return []\n")
    assert strict.verify(code, LENIENT_MEAN).score == 0.0


def test_numpy_is_imported_only_for_checks_that_name_it(strict):
    # the word is spelled in two halves: the check's code must not name it
    silent = {"entry_point": "f", "test": "import sys\n\ndef check(candidate):\n"
              "    assert ('num' + 'py') not in sys.modules\n    assert candidate(1) == 2\n"}
    assert strict.verify("def f(x):\n    return 2 * x\n", silent).score == 1.0
    named = {"entry_point": "f", "test": "import numpy as np\n\ndef check(candidate):\n"
             "    assert hasattr(np.allclose, '__wrapped__')\n    assert candidate(1) == 2\n"}
    assert strict.verify("def f(x):\n    return 2 * x\n", named).score == 1.0


def test_option_must_be_a_boolean_before_any_sandbox_starts():
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match="strict_numeric"):
            CodeVerifier(strict_numeric=bad)
        with pytest.raises(ValueError, match="strict_numeric"):
            CodeVerifier.check_options({"strict_numeric": bad})
    # a grading option, so a request or a data line may set it
    assert "strict_numeric" in spec_for("code").request_options


STRICT_RULES = r"""
import numpy as np, numpy.testing
from rlvr.verifiers.code.sandboxed import strict_numeric
assert np.allclose([], 2.0) and np.isclose([], [2.0]).all()  # numpy as it is
strict_numeric.install()
refused = []
for a, b in (([], 2.0), ([], [2.0]), ([2.0, 2.0], 2.0), ([[]], [[1.0]]), ([1.0, 2.0], [1.0])):
    refused.append(not np.allclose(a, b))
    try:
        np.testing.assert_allclose(a, b)
        refused.append(False)
    except AssertionError:
        refused.append(True)
    try:
        np.testing.assert_equal(np.array(a), np.array(b))
        refused.append(False)
    except AssertionError:
        refused.append(True)
refused.append(not np.all(np.isclose([], 2.0)))
refused.append(not np.allclose(b=2.0, a=[]))  # by name too
refused.append(not np.array_equiv([], [3.0]))
kept = [np.allclose([1.0, 2.0], [1.0, 2.0 + 1e-12]), bool(np.all(np.isclose([0.0, 0.0], 0))),
        np.array_equiv([1, 1], 1), np.isclose(2.0, 2.0), np.allclose(2.0, [2.0]),
        np.allclose([[1.0, 2.0]], [1.0, 2.0]), np.allclose([], [])]
np.testing.assert_allclose([2, 4], np.array([2.0, 4.0]))  # dtype is not checked
print(all(refused), len(refused), all(kept))
"""


def test_the_rules_in_a_process_of_their_own():
    result = subprocess.run([sys.executable, "-c", STRICT_RULES], capture_output=True,
                            text=True, timeout=120, env={"PYTHONPATH": SRC})
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "18", "True"]
