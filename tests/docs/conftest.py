"""The ``benchmarks_path`` fixture: ``benchmarks/`` importable for one test
(tests/docs/bench_imports.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.docs.bench_imports import BENCHMARKS, benchmarks_on_path


@pytest.fixture
def benchmarks_path() -> Iterator[Path]:
    with benchmarks_on_path():
        yield BENCHMARKS
