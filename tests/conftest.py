"""Shared test fixtures: where the public evaluation data lives."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvr.data.sources import shared_data_dir

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return shared_data_dir()
