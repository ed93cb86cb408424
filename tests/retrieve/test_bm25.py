"""BM25Index: ranking, stemming, stop words, edge cases, save/load."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from biorag.errors import IndexMismatchError
from biorag.retrieve.bm25 import BM25Index, Tokenizer

DOCS = {
    "d1": "BRCA1 mutations increase the risk of breast and ovarian cancer.",
    "d2": "Metformin is a first-line drug for type 2 diabetes.",
    "d3": "Inhibition of mTOR by rapamycin extends lifespan in mice.",
    "d4": "The weather in Paris is mild in spring.",
    "d5": "",
}


@pytest.fixture(scope="module")
def index() -> BM25Index:
    return BM25Index.build(list(DOCS), list(DOCS.values()))


def test_obvious_document_ranks_first(index: BM25Index) -> None:
    hits = index.search(["which drug treats type 2 diabetes?"], k=3)[0]
    assert hits[0].id == "d2"
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    assert all(a.score >= b.score for a, b in itertools.pairwise(hits))


def test_stemming_matches_inflections(index: BM25Index) -> None:
    tok = Tokenizer()
    # Snowball English: "inhibits", "inhibition", "inhibited" -> "inhibit"; "mutated" ~ "mutations".
    assert tok("inhibits inhibition inhibited") == ["inhibit"] * 3
    assert tok("mutated")[0] == tok("mutations")[0]
    assert index.search(["what inhibits mTOR"], k=1)[0][0].id == "d3"
    assert index.search(["mutated BRCA1"], k=1)[0][0].id == "d1"


def test_stop_words_and_empty_queries(index: BM25Index) -> None:
    assert Tokenizer()("What is the role of it?") == ["role"]
    results = index.search(["", "what is the", "zzzunknownword", "!!"], k=5)
    assert results == [[], [], [], []]


def test_only_matching_documents_and_k_larger_than_corpus(index: BM25Index) -> None:
    hits = index.search(["cancer"], k=100)[0]
    assert [h.id for h in hits] == ["d1"]
    assert len(index.search(["mice lifespan diabetes cancer Paris"], k=100)[0]) == 4
    assert index.search(["cancer"], k=0) == [[]]
    assert index.n_docs == 5


def test_threads_give_same_results(index: BM25Index) -> None:
    queries = ["cancer risk", "diabetes drug", "mTOR", "Paris spring"]
    assert index.search(queries, k=3, n_threads=2) == index.search(queries, k=3)


def test_save_load_round_trip(index: BM25Index, tmp_path: Path) -> None:
    queries = ["breast cancer", "metformin diabetes", "rapamycin inhibits mTOR", "the"]
    target = tmp_path / "bm25"
    index.save(target)
    index.save(target)  # replacing an existing index works
    loaded = BM25Index.load(target)
    assert loaded.n_docs == index.n_docs
    assert loaded.ids == index.ids
    assert loaded.search(queries, k=3) == index.search(queries, k=3)
    assert [p.name for p in tmp_path.iterdir()] == ["bm25"]  # no temporary leftovers


def test_load_rejects_other_directories(tmp_path: Path) -> None:
    with pytest.raises(IndexMismatchError, match="not a biorag BM25 index"):
        BM25Index.load(tmp_path)


def test_build_validates_input() -> None:
    with pytest.raises(ValueError, match="unique"):
        BM25Index.build(["a", "a"], ["x y", "y z"])
    with pytest.raises(ValueError, match="ids for"):
        BM25Index.build(["a"], ["x", "y"])
