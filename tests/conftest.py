"""Shared test fixtures: where the public evaluation data lives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_dir() -> Path:
    """../shared/data beside the checkout (CI), or RLVR_SHARED_DATA, or /work/shared/data."""
    candidates = [os.environ.get("RLVR_SHARED_DATA"), REPO.parent / "shared" / "data",
                  Path("/work/shared/data")]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    raise FileNotFoundError("shared evaluation data not found; set RLVR_SHARED_DATA "
                            f"(looked in {[str(c) for c in candidates if c]})")


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return shared_data_dir()
