"""No method blocks the event loop: every embedding, reranking and no-LLM step of a method
runs in a worker thread, so a service answering many questions on one loop stays responsive."""

from __future__ import annotations

import asyncio
import traceback

import pytest
from methods_helpers import DRY_RUN, QUESTION, build_index

from biorag.config import Settings
from biorag.methods.registry import build_method
from biorag.runtime import Runtime

METHODS = ["claims", "retrieve-read", "closed-book", "rewrite", "hyde", "raptor", "claim",
           "iprar", "crag"]  # fmt: skip


class LoopWatchingEmbedder:
    """An embedder that records the call stack of every embedding made on a thread that runs
    an event loop."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.calls: list[int] = []
        self.on_loop: list[str] = []

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def embed(self, texts, **kwargs):
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            pass
        else:
            self.on_loop.append("".join(traceback.format_stack(limit=8)[:-1]))
        self.calls.append(len(texts))
        return self.inner.embed(texts, **kwargs)


@pytest.mark.parametrize("llm", [None, DRY_RUN], ids=["no-llm", "dry-run-llm"])
@pytest.mark.parametrize("method", METHODS)
def test_no_embedding_on_the_event_loop(tmp_path, hash_embedder, method, llm):
    index = build_index(tmp_path, hash_embedder)
    emb = LoopWatchingEmbedder(hash_embedder)
    settings = Settings.model_validate({"home": str(tmp_path / "home"), "llm": llm or {}})
    with Runtime(settings, [index], embedder=emb) as rt:
        ans = asyncio.run(build_method(method, rt).answer(QUESTION))
    assert ans.answer in QUESTION.options
    if not (method == "closed-book" and llm):  # a model reading no context embeds nothing
        assert emb.calls, "the method embedded nothing: the check saw nothing"
    assert not emb.on_loop, f"{len(emb.on_loop)} embedding(s) on the loop:\n{emb.on_loop[0]}"
