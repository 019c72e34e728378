from __future__ import annotations

import pytest

from rlvr.verifiers import InvalidReference
from rlvr.verifiers.exact import ExactVerifier

V = ExactVerifier()


@pytest.mark.parametrize("completion,reference,passed", [
    ("19", "19", True), ("  19 \n", "19", True), ("Answer: 19", "19", True),
    ("#### 1,000", "1000", True), ("19.0", "19", True), ("\u221219", "-19", True),
    ("19 or 20", "19", False), ("20", "19", False), ("", "19", False),
    ("The answer is 19", "19", False),  # padding is not an answer
    ("Paris", "paris", True),
])
def test_exact(completion, reference, passed):
    assert V.verify(completion, reference).passed is passed


def test_invalid_reference():
    with pytest.raises(InvalidReference):
        V.verify("1", {"x": 1})
