"""Index directories: build, incremental add, remove, resume after a kill, model mismatch;
and searching them at chunk and document level, over one corpus or several."""

from __future__ import annotations

import json

import pytest
from tests.conftest import HashEmbedder

from biorag.corpus.loaders import load_corpus
from biorag.corpus.models import Document
from biorag.errors import BioragError, IndexMismatchError
from biorag.retrieve.index import IndexDir, index_stats
from biorag.retrieve.search import MultiSearcher, Searcher


def build(path, corpus_file, emb):
    idx = IndexDir(path, emb, name=path.name)
    rep = idx.add(load_corpus(corpus_file))
    idx.close()
    return rep


def test_build_then_search_every_retriever(tmp_path, corpus_file, hash_embedder):
    rep = build(tmp_path / "idx", corpus_file, hash_embedder)
    assert rep.documents_new == 4 and rep.chunks_total >= 4
    s = Searcher(tmp_path / "idx", hash_embedder)
    for retriever in ("bm25", "dense", "hybrid"):
        top = s.search(["atorvastatin LDL cholesterol"], k=2, retriever=retriever)[0]
        assert top[0].source_id == "1002", retriever
        assert top[0].rank == 1 and top[0].corpus == "idx"
        assert top[0].text in json.dumps(json.loads(corpus_file.read_text().splitlines()[1]))
    s.close()


def test_doc_level_returns_each_document_once(tmp_path, hash_embedder):
    docs = [
        Document.create(source_id="A", text="Aspirin inhibits platelets. " * 3, spans=None),
        Document.create(source_id="B", text="Aspirin and bleeding risk in the elderly."),
    ]
    # Force several chunks for document A through fixed spans.
    a = docs[0]
    docs[0] = a.model_copy(update={"spans": [(0, 27), (28, 55), (56, len(a.text))]})
    idx = IndexDir(tmp_path / "i", hash_embedder)
    idx.add(docs)
    idx.close()
    s = Searcher(tmp_path / "i", hash_embedder)
    chunks = s.search(["aspirin platelets"], k=4, retriever="bm25", level="chunk")[0]
    docs_ = s.search(["aspirin platelets"], k=4, retriever="bm25", level="doc")[0]
    assert len({p.doc_id for p in chunks}) < len(chunks)
    assert [p.source_id for p in docs_] == ["A", "B"]
    s.close()


def test_add_embeds_only_new_chunks_and_is_idempotent(tmp_path, corpus_file, hash_embedder):
    build(tmp_path / "idx", corpus_file, hash_embedder)
    first = sum(hash_embedder.calls)
    more = tmp_path / "more.jsonl"
    more.write_text(
        json.dumps({"id": "2001", "text": "Warfarin prevents stroke in atrial fibrillation."})
        + "\n"
    )
    idx = IndexDir(tmp_path / "idx", hash_embedder)
    rep = idx.add(load_corpus(more))
    assert rep.documents_new == 1 and rep.chunks_embedded == 1
    assert sum(hash_embedder.calls) == first + 1
    again = idx.add(load_corpus(corpus_file))
    assert again.documents_new == 0 and again.chunks_embedded == 0
    idx.close()
    assert index_stats(tmp_path / "idx")["documents"] == 5


def test_remove_by_source_id_everywhere(tmp_path, corpus_file, hash_embedder):
    build(tmp_path / "idx", corpus_file, hash_embedder)
    idx = IndexDir(tmp_path / "idx", hash_embedder)
    rep = idx.remove(["1002"])
    assert rep.documents_removed == 1 and rep.documents_total == 3
    with pytest.raises(BioragError, match="no document with id or source id 'nope'"):
        idx.remove(["nope"])
    idx.close()
    s = Searcher(tmp_path / "idx", hash_embedder)
    for retriever in ("bm25", "dense", "hybrid"):
        hits = s.search(["atorvastatin LDL cholesterol"], k=5, retriever=retriever)[0]
        assert "1002" not in {p.source_id for p in hits}
    s.close()


class Crash(Exception):
    pass


class CrashingEmbedder(HashEmbedder):
    """Dies on its second batch, like a build killed half way."""

    def __init__(self, fail_on: int):
        super().__init__()
        self.fail_on = fail_on

    def embed(self, texts, **kw):
        if len(self.calls) + 1 == self.fail_on:
            self.calls.append(-1)
            raise Crash
        return super().embed(texts, **kw)


def test_interrupted_build_resumes_without_recomputing(tmp_path, corpus_file):
    crashing = CrashingEmbedder(fail_on=2)
    idx = IndexDir(tmp_path / "idx", crashing)
    with pytest.raises(Crash):
        idx.add(load_corpus(corpus_file), batch_size=1)  # one chunk per embedding batch
    idx.close()
    stats = index_stats(tmp_path / "idx") if (tmp_path / "idx" / "manifest.json").exists() else None
    assert stats is None or not stats["complete"]
    fresh = HashEmbedder()
    idx = IndexDir(tmp_path / "idx", fresh)
    embedded_before = idx.store.count_chunks(with_vectors=True)
    rep = idx.add(load_corpus(corpus_file), batch_size=1)
    idx.close()
    assert rep.documents_new == 0
    assert sum(fresh.calls) == rep.chunks_total - embedded_before
    assert index_stats(tmp_path / "idx")["complete"]


def test_other_embedding_model_is_a_clear_error(tmp_path, corpus_file, hash_embedder):
    build(tmp_path / "idx", corpus_file, hash_embedder)

    class Other(HashEmbedder):
        model_id = "test:other"

    with pytest.raises(IndexMismatchError, match="built with embedding model test:hash-64"):
        IndexDir(tmp_path / "idx", Other())
    s = Searcher(tmp_path / "idx", Other())
    assert s.search(["aspirin"], 1, "bm25")  # BM25 needs no model
    with pytest.raises(IndexMismatchError, match="test:other"):
        s.search(["aspirin"], 1, "dense")
    s.close()


def test_not_an_index(tmp_path, hash_embedder):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file.txt").write_text("hi")
    with pytest.raises(BioragError, match="is not a biorag index"):
        IndexDir(tmp_path / "x", hash_embedder)
    with pytest.raises(BioragError, match="not a biorag index"):
        Searcher(tmp_path / "x", hash_embedder)


def test_multi_corpus_takes_from_each(tmp_path, corpus_file, hash_embedder):
    build(tmp_path / "pubmed", corpus_file, hash_embedder)
    book = tmp_path / "book.jsonl"
    book.write_text(
        "".join(
            json.dumps({"id": f"b{i}", "text": f"Textbook chapter {i} on cholesterol and statins."})
            + "\n"
            for i in range(5)
        )
    )
    build(tmp_path / "textbooks", book, hash_embedder)
    ms = MultiSearcher(
        [
            Searcher(tmp_path / "pubmed", hash_embedder),
            Searcher(tmp_path / "textbooks", hash_embedder),
        ]
    )
    res = ms.search(["statins cholesterol"], k=2, retriever="hybrid")[0]
    assert [p.corpus for p in res].count("pubmed") == 2
    assert [p.corpus for p in res].count("textbooks") == 2
    assert [p.rank for p in res] == [1, 2, 3, 4]
    ms.close()
