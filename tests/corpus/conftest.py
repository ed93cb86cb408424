"""Fixtures for the corpus tests: the token counter and the optional shared benchmark data."""

from __future__ import annotations

from pathlib import Path

import pytest

from biorag.corpus.tokens import TokenCounter, default_counter


def shared_data_dir() -> Path:
    """The repository root's sibling ``shared/data`` folder (may not exist)."""
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.fixture(scope="session")
def counter() -> TokenCounter:
    return default_counter()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``../shared/data``; the test is skipped when it is absent."""
    path = shared_data_dir()
    if not path.is_dir():
        pytest.skip(f"shared data not available at {path}")
    return path
