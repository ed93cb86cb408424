"""The runtime: components built once (also when threads ask at once), children per request,
and closing by context manager."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from methods_helpers import DRY_RUN, QUESTION, build_index

from biorag.config import Settings
from biorag.errors import BioragError
from biorag.methods.registry import build_method
from biorag.runtime import Runtime


def settings(tmp_path, llm: dict | None = None) -> Settings:
    return Settings.model_validate({"home": str(tmp_path / "home"), "llm": llm or {}})


def test_components_are_built_once_when_threads_ask_at_once(tmp_path, monkeypatch, hash_embedder):
    from biorag.embed import factory

    builds: list[int] = []

    def slow_build(*args, **kwargs):
        builds.append(1)
        time.sleep(0.05)  # a model load: long enough for every thread to arrive meanwhile
        return hash_embedder

    monkeypatch.setattr(factory, "build_embedder", slow_build)
    rt = Runtime(settings(tmp_path, DRY_RUN))
    got: list = []
    threads = [
        threading.Thread(target=lambda: got.append((rt.embedder, rt.llm))) for _ in range(12)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len(got) == 12
    assert {id(e) for e, _ in got} == {id(hash_embedder)}
    assert len({id(llm) for _, llm in got}) == 1 and rt.built() == {"embedder", "llm"}
    rt.close()


def test_closed_by_with_and_refuses_later_use(tmp_path, hash_embedder):
    index = build_index(tmp_path, hash_embedder)
    with Runtime(settings(tmp_path, DRY_RUN), [index], embedder=hash_embedder) as rt:
        ans = build_method("retrieve-read", rt, {"k": 2}).answer_sync(QUESTION)
        assert ans.evidence and rt.built() >= {"searcher", "llm"}
        store = rt.searcher.searchers[0].store
    assert rt.accounting()["total"]["calls"] >= 1  # the counts outlive the LLM
    assert "searcher" not in rt.built()
    with pytest.raises(Exception):  # noqa: B017 - the index's store was closed
        store.count_documents()
    with pytest.raises(BioragError, match="runtime is closed"):
        _ = rt.llm


def test_async_with_closes_the_llms_on_the_running_loop(tmp_path, hash_embedder):
    closed: list[str] = []

    async def main() -> Runtime:
        async with Runtime(settings(tmp_path, DRY_RUN), embedder=hash_embedder) as rt:
            llm = rt.llm
            assert llm is not None
            original = llm.aclose

            async def aclose() -> None:
                closed.append("llm")
                await original()

            llm.aclose = aclose  # type: ignore[method-assign]
            rt.llm_variant({"model": "second"})
            assert rt.open_llm_variants == 1
            await build_method("closed-book", rt).answer(QUESTION)
        return rt

    rt = asyncio.run(main())
    assert closed == ["llm"] and rt.open_llm_variants == 0


def test_a_child_per_request_shares_components_and_closes_nothing(tmp_path, hash_embedder):
    index = build_index(tmp_path, hash_embedder)
    st = settings(tmp_path, DRY_RUN)
    base = Runtime(st, [index], embedder=hash_embedder)
    from biorag.llm.accounting import Accounting

    a = base.for_question(Accounting())
    b = Runtime(st, [index], embedder=hash_embedder, llm=None).for_question(Accounting())
    assert a.searcher is base.searcher and a.embedder is base.embedder
    assert a.llm is not None and b.llm is None and a.llm is not base.llm
    assert a.llm.backend is base.llm.backend  # one shared model: the same limit, the same backend
    assert a.reranker is base.reranker  # a bi-encoder: shared; an LLM judge would be a.llm's
    build_method("retrieve-read", a, {"k": 2}).answer_sync(QUESTION)
    assert a.accounting()["total"]["calls"] >= 1 and base.accounting()["total"]["calls"] == 0
    a.close()
    b.close()
    assert "searcher" in base.built()  # the children closed nothing of the base
    assert base.searcher.search(["KRX1"], 1, "bm25")[0]
    base.close()


def test_no_index_is_a_library_error(tmp_path):
    with Runtime(settings(tmp_path)) as rt, pytest.raises(BioragError, match="no index"):
        _ = rt.searcher
