"""MultiSearcher.search(..., corpora=[...]): only the named indexes are searched."""

from __future__ import annotations

import pytest

from biorag.corpus.models import Document
from biorag.errors import BioragError
from biorag.retrieve.index import IndexDir
from biorag.retrieve.search import MultiSearcher, Searcher

TEXTS = {
    "alpha": ["Statins lower LDL cholesterol.", "Statins reduce myocardial infarction."],
    "beta": ["Statins and muscle pain.", "LDL cholesterol and statins in the elderly."],
    "gamma": ["Statins for children with familial hypercholesterolemia."],
}


@pytest.fixture
def searcher(tmp_path, hash_embedder):
    for name, texts in TEXTS.items():
        idx = IndexDir(tmp_path / f"dir-{name}", hash_embedder, name=name)
        idx.add([Document.create(source_id=f"{name}{i}", text=t) for i, t in enumerate(texts)])
        idx.close()
    ms = MultiSearcher([Searcher(tmp_path / f"dir-{n}", hash_embedder) for n in TEXTS])
    yield ms
    ms.close()


def corpora_of(rows):
    return [p.corpus for p in rows]


def test_default_searches_every_corpus(searcher):
    assert searcher.names == ["alpha", "beta", "gamma"]
    rows = searcher.search(["statins LDL"], 2, "bm25")[0]  # positional, as before
    assert sorted(set(corpora_of(rows))) == ["alpha", "beta", "gamma"]
    assert searcher.search(["statins LDL"], 2, "bm25", "chunk", corpora=None)[0] == rows


@pytest.mark.parametrize("retriever", ["bm25", "dense", "hybrid"])
@pytest.mark.parametrize("level", ["chunk", "doc"])
def test_only_the_named_corpora(searcher, retriever, level):
    rows = searcher.search(["statins LDL"], 2, retriever, level, corpora=["beta"])[0]
    assert corpora_of(rows) == ["beta", "beta"] and [p.rank for p in rows] == [1, 2]
    two = searcher.search(["statins LDL"], 2, retriever, level, corpora=["gamma", "alpha"])[0]
    assert corpora_of(two) == ["gamma", "alpha", "alpha"]  # merged rank by rank, order named
    again = searcher.search(["statins LDL"], 2, retriever, level, corpora=["beta", "beta"])[0]
    assert [p.chunk_id for p in again] == [p.chunk_id for p in rows]  # duplicates dropped


def test_a_string_names_one_corpus(searcher):
    rows = searcher.search(["statins"], 3, "bm25", corpora="gamma")[0]  # type: ignore[arg-type]
    assert corpora_of(rows) == ["gamma"]


def test_unknown_or_empty_corpora_are_clear_errors(searcher):
    with pytest.raises(BioragError) as e:
        searcher.search(["statins"], 2, "bm25", corpora=["alpha", "delta"])
    msg = str(e.value)
    assert "'delta'" in msg and "'alpha', 'beta', 'gamma'" in msg and "manifest name" in msg
    with pytest.raises(BioragError, match="corpora is empty"):
        searcher.search(["statins"], 2, "bm25", corpora=[])


def test_concurrent_searches_match_serial_ones(searcher):
    """Threads share one searcher (an eval's questions, a service's requests); it serializes
    their searches itself, so each gets what a search alone gets."""
    from concurrent.futures import ThreadPoolExecutor

    queries = ["statins", "LDL cholesterol", "aspirin", "vitamin D", "statin myopathy"] * 4

    def one(i: int) -> list[str]:
        corpora = [["alpha"], ["beta"], None][i % 3]
        rows = searcher.search([queries[i]], 3, "hybrid", "chunk", corpora=corpora)[0]
        return [p.chunk_id for p in rows]

    serial = [one(i) for i in range(len(queries))]
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(one, range(len(queries)))) == serial
    assert searcher.names == ["alpha", "beta", "gamma"]


def test_each_corpus_searched_with_its_own_retriever(tmp_path, hash_embedder, caplog):
    from biorag.config import RetrievalSettings, load_settings

    for name, texts in TEXTS.items():
        idx = IndexDir(tmp_path / f"dir-{name}", hash_embedder, name=name)
        idx.add([Document.create(source_id=f"{name}{i}", text=t) for i, t in enumerate(texts)])
        idx.close()
    cfg = RetrievalSettings(corpus_retrievers={"alpha": "bm25", "beta": "dense", "nope": "bm25"})
    with caplog.at_level("WARNING", logger="biorag"):
        ms = MultiSearcher([Searcher(tmp_path / f"dir-{n}", hash_embedder, cfg) for n in TEXTS])
    assert "corpus_retrievers names nope" in caplog.text
    rows = ms.search(["statins LDL"], 1, "hybrid")[0]
    assert {p.corpus: p.retriever for p in rows} == {
        "alpha": "bm25",
        "beta": "dense",
        "gamma": "hybrid",
    }
    ms.close()
    # from the environment: JSON or name=retriever pairs; a bad retriever names the key
    env = {"BIORAG_RETRIEVAL_CORPUS_RETRIEVERS": "wikipedia=bm25,pubmed=dense"}
    assert load_settings(environ=env).retrieval.corpus_retrievers == {
        "wikipedia": "bm25",
        "pubmed": "dense",
    }
    env = {"BIORAG_RETRIEVAL_CORPUS_RETRIEVERS": '{"textbooks": "hybrid"}'}
    assert load_settings(environ=env).retrieval.corpus_retrievers == {"textbooks": "hybrid"}
    with pytest.raises(BioragError, match=r"retrieval\.corpus_retrievers"):
        load_settings(environ={"BIORAG_RETRIEVAL_CORPUS_RETRIEVERS": "pubmed=splade"})
