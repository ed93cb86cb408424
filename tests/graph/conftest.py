"""Fixtures of the graph tests (helpers live in graph_helpers.py)."""

from __future__ import annotations

import pytest
from tests.graph.graph_helpers import build_small_graph

from biorag.graph import ClaimGraph


@pytest.fixture
def small_graph() -> ClaimGraph:
    return build_small_graph()
