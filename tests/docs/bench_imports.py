"""``benchmarks/`` importable for a test (its figures, the renderer), and taken away again."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@contextmanager
def benchmarks_on_path() -> Iterator[None]:
    """``benchmarks/`` first on ``sys.path``; afterwards ``sys.path`` and ``sys.modules`` are as
    they were: the modules imported from ``benchmarks/`` (``figures``, ``figures.fig_*``,
    ``render_docs``) are dropped again, so the next import is fresh and nothing leaks into
    other tests."""
    before_path, before_modules = sys.path[:], set(sys.modules)
    sys.path.insert(0, str(BENCHMARKS))
    try:
        yield
    finally:
        sys.path[:] = before_path
        for name in set(sys.modules) - before_modules:
            file = getattr(sys.modules[name], "__file__", None) or ""
            if file and Path(file).resolve().is_relative_to(BENCHMARKS):
                del sys.modules[name]
