"""Shared test fixtures (where the public evaluation data lives) and the slow tier:
tests/slow_tests.txt lists the tests `make test-fast` leaves out."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from rlvr.data.sources import shared_data_dir

REPO = Path(__file__).resolve().parents[1]
SLOW_LIST = Path(__file__).resolve().parent / "slow_tests.txt"


def slow_tests() -> set[str]:
    """`tests/file.py::test_name` of every test in the slow list, or `tests/file.py` for
    a whole file (one whose module fixture is the slow part: leaving out its slow tests
    alone would move that cost onto the others)."""
    lines = SLOW_LIST.read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def pytest_configure(config):
    """Under pytest-xdist (`make test` runs two workers on two cores) each worker and the
    processes it starts compute on one thread: two workers whose torch each spins
    OpenMP threads on every core slow each other many times over. A test that needs
    more threads sets them itself (torch.set_num_threads, OMP_NUM_THREADS)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.setdefault("OMP_NUM_THREADS", "1")
        import torch

        torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    listed = slow_tests()
    for item in items:
        path = Path(str(item.path)).resolve().relative_to(REPO).as_posix()
        if path in listed or f"{path}::{item.originalname}" in listed:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    return shared_data_dir()
