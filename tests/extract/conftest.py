"""Fixtures of the extract tests: a scripted LLM (no cache, no retry delay) and chunks."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from biorag.corpus.models import Chunk
from biorag.llm import LLM, MockBackend


def make_chunk(text: str, doc: str = "d1", index: int = 0) -> Chunk:
    return Chunk(
        id=Chunk.make_id(doc, index * 1000, index * 1000 + len(text)),
        doc_id=doc,
        index=index,
        start=index * 1000,
        end=index * 1000 + len(text),
        text=text,
    )


@pytest.fixture
def chunk() -> Callable[..., Chunk]:
    return make_chunk


@pytest.fixture
def mock_llm() -> Callable[[list[dict]], LLM]:
    """``mock_llm(rules)``: an LLM over ``MockBackend(rules)``; ``llm.backend.calls`` records
    the requests."""

    def make(rules: list[dict]) -> LLM:
        return LLM(MockBackend(rules=rules), max_retries=0, retry_base_delay=0.0)

    return make


@pytest.fixture
def stage_calls() -> Callable[[LLM], dict[str, int]]:
    """``stage_calls(llm)``: calls per stage from the client's accounting."""

    def get(llm: LLM) -> dict[str, int]:
        return {k: v["calls"] for k, v in llm.accounting.report()["stages"].items()}

    return get
