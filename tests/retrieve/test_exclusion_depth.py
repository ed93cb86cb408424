"""A search whose hits are all excluded goes deeper only as far as the index reaches (and never
past Milvus's top-k limit), then returns what it has; and a child runtime's exclusion adds to
the one of the runtime it was made from."""

from __future__ import annotations

import pytest

from biorag.config import Settings
from biorag.llm.accounting import Accounting
from biorag.retrieve import search as search_mod
from biorag.retrieve.exclusion import DocExclusion
from biorag.retrieve.search import Searcher
from biorag.runtime import Runtime

N = 60  # documents of one chunk each: more than the first ranking (50 deep) holds
DOCS = [{"id": f"{1000 + i}", "text": f"Fibrosis was measured in cohort {i}."} for i in range(N)]
QUERY = ["fibrosis measured in cohort"]


def _depths(monkeypatch: pytest.MonkeyPatch, searcher: Searcher) -> list[int]:
    depths: list[int] = []
    rank = searcher._rank

    def spy(queries: list[str], depth: int, retriever: str) -> list:
        depths.append(depth)
        return rank(queries, depth, retriever)

    monkeypatch.setattr(searcher, "_rank", spy)
    return depths


@pytest.mark.parametrize("retriever", ["bm25", "dense", "hybrid"])
def test_every_document_excluded_returns_fewer_than_k_at_the_index_depth(
    index_of, hash_embedder, monkeypatch, retriever
):
    searcher = Searcher(index_of(DOCS, "tiny"), hash_embedder)
    depths = _depths(monkeypatch, searcher)
    ex = DocExclusion.of(d["id"] for d in DOCS)
    assert searcher.search(QUERY, 5, retriever, exclude=ex) == [[]]
    assert depths == [50, N]  # one deeper search, as deep as the index, then no further
    assert ex.searches == 1 and ex.hits == N
    searcher.close()


def test_the_deeper_search_never_asks_past_the_top_k_limit(index_of, hash_embedder, monkeypatch):
    monkeypatch.setattr(search_mod, "MAX_DEPTH", 55)  # stands for Milvus's 16,384
    searcher = Searcher(index_of(DOCS, "tiny"), hash_embedder)
    depths = _depths(monkeypatch, searcher)
    ex = DocExclusion.of(d["id"] for d in DOCS[:-1])  # one document is left to find
    kept = searcher.search(QUERY, 5, "dense", exclude=ex)[0]
    assert depths == [50, 55] and len(kept) <= 1
    searcher.close()


def test_a_child_runtimes_exclusion_adds_to_its_parents(tmp_path, index_of, hash_embedder):
    docs = [
        {"id": "1", "text": "Metformin lowers blood glucose in type 2 diabetes."},
        {"id": "2", "text": "Metformin lowers glucose and weight in adults."},
        {"id": "3", "text": "Metformin is the first-line glucose lowering drug."},
        {"id": "4", "text": "Statins lower LDL cholesterol."},
    ]
    settings = Settings.model_validate({"home": str(tmp_path / "home")})
    rt = Runtime(settings, [index_of(docs, "toy")], embedder=hash_embedder)
    outer, inner = DocExclusion.of(["1"]), DocExclusion.of(["2"])
    child = rt.for_question(Accounting(), outer)
    grandchild = child.for_question(Accounting(), inner)
    q = ["metformin lowers glucose"]
    assert {p.source_id for p in rt.searcher.search(q, 3)[0]} == {"1", "2", "3"}
    assert {p.source_id for p in child.searcher.search(q, 3)[0]} == {"2", "3", "4"}
    assert {p.source_id for p in grandchild.searcher.search(q, 3)[0]} == {"3", "4"}
    (one,) = grandchild.searcher.select(None)  # a corpus picked out obeys both too
    assert {p.source_id for p in one.search(q, 3)[0]} == {"3", "4"}
    # each exclusion counts what it names: the grandchild's searches count into both
    assert (outer.found, inner.found) == ({"1"}, {"2"})
    assert outer.searches == 3 and inner.searches == 2
    # one that only counts (drop=False) under one that drops: the parent's still drops
    counting = DocExclusion.of(["1", "2"], drop=False)
    watched = child.for_question(Accounting(), counting)
    assert {p.source_id for p in watched.searcher.search(q, 3)[0]} == {"2", "3", "4"}
    assert counting.found == {"1", "2"}  # it counts the hits it names, whoever leaves them out
    rt.close()
