"""The one ask (biorag.asking): its answer carries its accounting and trace, each ask counts
into the runtime's accounting, and a bad ask is refused before anything runs."""

from __future__ import annotations

import asyncio

import pytest

from biorag.asking import ask, prepare
from biorag.config import Settings
from biorag.corpus.datasets.base import Question
from biorag.errors import BioragError
from biorag.runtime import Runtime

DOCS = [
    {"id": "1", "text": "Metformin lowers blood glucose in type 2 diabetes. It is cheap."},
    {"id": "2", "text": "Statins lower LDL cholesterol. They reduce cardiovascular events."},
]
QUESTION = Question(text="Does metformin lower blood glucose?", options={"A": "yes", "B": "no"})
DRY_RUN = {"backend": "mock", "mock_script": "dry-run", "cache": False}


def runtime(tmp_path, index, embedder, llm=None):
    settings = Settings.model_validate({"home": str(tmp_path / "home"), "llm": llm or {}})
    return Runtime(settings, [index] if index else [], embedder=embedder)


def test_each_answer_has_its_own_accounting_and_the_runtime_sums_them(
    tmp_path, index_of, hash_embedder
):
    rt = runtime(tmp_path, index_of(DOCS, "toy"), hash_embedder, DRY_RUN)

    async def two() -> list:
        return [await ask(rt, QUESTION, "retrieve-read", {"k": 2}) for _ in range(2)]

    first, second = asyncio.run(two())
    calls = first.accounting["total"]["calls"]
    assert calls >= 1 and second.accounting["total"]["calls"] == calls
    assert first.accounting["wall_s"] > 0
    assert rt.accounting()["total"]["calls"] == 2 * calls
    assert first.trace is None  # retrieve-read keeps nothing beyond its details
    rt.close()


def test_claims_answer_carries_its_run_as_its_trace(tmp_path, index_of, hash_embedder):
    rt = runtime(tmp_path, index_of(DOCS, "toy"), hash_embedder)  # the no-LLM floor
    answer = asyncio.run(ask(rt, QUESTION, "claims"))
    run = answer.trace
    assert run is not None and run.graph is not None and run.question == QUESTION
    assert {c.id for c in run.claims} == {c["id"] for c in answer.details.model_dump()["claims"]}
    assert "trace" not in answer.model_dump()
    assert rt.accounting() == {}  # no LLM
    rt.close()


def test_a_bad_ask_is_refused_before_it_runs(tmp_path, hash_embedder):
    rt = runtime(tmp_path, None, hash_embedder)
    with pytest.raises(BioragError, match="retrieves evidence and no index was given"):
        prepare(rt, QUESTION, "retrieve-read")
    with pytest.raises(BioragError, match="takes no options; remove 'kk'"):
        prepare(rt, QUESTION, "closed-book", {"kk": 1})
    given = Question(text=QUESTION.text, options=QUESTION.options, passages=["Metformin works."])
    prepared = prepare(rt, given, "retrieve-read")  # its own passages: no index needed
    assert asyncio.run(prepared.run()).answer in QUESTION.options
    with pytest.raises(RuntimeError, match="has run"):
        asyncio.run(prepared.run())
    rt.close()


def test_a_ready_made_model_counts_each_answer_on_its_own(tmp_path, index_of, hash_embedder):
    """A runtime given its LLM (a caller's, a test's) gives each ask a client like it over the
    same backend: the answer's accounting is its own, and the runtime's sums them."""
    from biorag.llm import build_llm

    settings = Settings.model_validate({"home": str(tmp_path / "home"), "llm": DRY_RUN})
    llm = build_llm(settings)
    assert llm is not None
    rt = Runtime(settings, [index_of(DOCS, "toy")], embedder=hash_embedder, llm=llm)

    async def two() -> list:
        return [await ask(rt, QUESTION, "retrieve-read", {"k": 2}) for _ in range(2)]

    first, second = asyncio.run(two())
    calls = first.accounting["total"]["calls"]
    assert calls >= 1 and second.accounting["total"]["calls"] == calls
    assert rt.accounting()["total"]["calls"] == llm.accounting.total().calls == 2 * calls
    rt.close()
    llm.close()
