"""Index directories whose search lives in Milvus (``index.backend = "milvus"``), against a real
server: milvus-lite in server mode on loopback (``milvus_live``; skipped, saying why, where
it is not installed). Build, add, remove, stats and search behave as the local backend; an
interrupted push resumes without duplicates; a bad setting is one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.conftest import DOCS, HashEmbedder

from biorag.config import IndexSettings, RetrievalSettings
from biorag.corpus.loaders import load_corpus
from biorag.corpus.models import Document
from biorag.errors import BioragError
from biorag.retrieve.index import IndexDir, index_stats
from biorag.retrieve.milvus_index import STATE_FILE
from biorag.retrieve.search import Searcher

QUERY = "atorvastatin LDL cholesterol"


@pytest.fixture
def milvus(milvus_live: str) -> IndexSettings:
    return IndexSettings(backend="milvus", milvus_uri=milvus_live)


def _build(path: Path, corpus_file: Path, emb: HashEmbedder, cfg: IndexSettings | None) -> None:
    with IndexDir(path, emb, name=path.name, index=cfg) as idx:
        idx.add(load_corpus(corpus_file))


def _more(n: int, start: int = 0) -> list[Document]:
    return [
        Document.create(
            source_id=f"x{i}",
            text=f"Compound {i} lowers blood pressure in trial {i}. Follow-up lasted {i} weeks.",
        )
        for i in range(start, start + n)
    ]


def test_search_matches_the_local_backend(
    tmp_path: Path, corpus_file: Path, hash_embedder: HashEmbedder, milvus: IndexSettings
) -> None:
    _build(tmp_path / "local", corpus_file, hash_embedder, None)
    _build(tmp_path / "remote", corpus_file, hash_embedder, milvus)
    local = Searcher(tmp_path / "local", hash_embedder)
    remote = Searcher(tmp_path / "remote", hash_embedder, index=milvus)
    assert not (tmp_path / "remote" / "bm25").exists()  # nothing searched on disk
    for retriever in ("bm25", "dense", "hybrid"):
        a = local.search([QUERY], k=4, retriever=retriever)[0]
        b = remote.search([QUERY], k=4, retriever=retriever)[0]
        assert b[0].source_id == a[0].source_id == "1002", retriever
        assert b[0].corpus == "remote" and b[0].text == a[0].text
        if retriever == "dense":  # exact at this size: the same ranking
            assert [p.chunk_id for p in b] == [p.chunk_id for p in a]
    # BM25 sees biorag's own terms (stemmed, stop words dropped) on every Milvus server
    assert remote.search(["lowering cholesterols"], k=1, retriever="bm25")[0][0].source_id == "1002"
    assert remote.search(["the of and"], k=2, retriever="bm25") == [[]]
    assert len(remote.search(["the of and"], k=2, retriever="hybrid")[0]) == 2  # dense alone
    fused_there = milvus.model_copy(update={"milvus_fusion": "server"})
    for fusion in ("score", "rrf"):
        in_server = Searcher(
            tmp_path / "remote", hash_embedder, RetrievalSettings(fusion=fusion), fused_there
        )
        # both queries in one request; the stop-word-only one gets its dense list
        top, stop_words = in_server.search([QUERY, "the of and"], k=4, retriever="hybrid")
        assert top[0].source_id == "1002" and len(stop_words) == 4
        in_server.close()
    docs = remote.search([QUERY], k=2, retriever="hybrid", level="doc")[0]
    assert len({p.doc_id for p in docs}) == len(docs)
    local.close()
    remote.close()


def test_add_sends_only_new_chunks_and_remove_deletes_them(
    tmp_path: Path, corpus_file: Path, hash_embedder: HashEmbedder, milvus: IndexSettings
) -> None:
    path = tmp_path / "idx"
    _build(path, corpus_file, hash_embedder, milvus)
    with IndexDir(path, hash_embedder, index=milvus) as idx:
        first = idx.milvus.count()
        assert first == idx.store.count_chunks()
        sent_before = json.loads((path / STATE_FILE).read_text())["sent_seq"]
        idx.add(_more(5))
        assert idx.milvus.count() == idx.store.count_chunks() == first + 5
        assert json.loads((path / STATE_FILE).read_text())["sent_seq"] > sent_before
        idx.add(_more(5))  # the same documents again: nothing new
        assert idx.milvus.count() == first + 5
        idx.remove(["1002"])
        assert idx.milvus.count() == first + 4
    stats = index_stats(path)
    assert stats["search_backend"]["kind"] == "milvus" and stats["documents"] == 8
    s = Searcher(path, hash_embedder, index=milvus)
    hits = s.search([QUERY], k=10, retriever="hybrid")[0]
    assert "1002" not in {p.source_id for p in hits}
    s.close()


def test_an_interrupted_push_resumes_without_duplicates(
    tmp_path: Path,
    corpus_file: Path,
    hash_embedder: HashEmbedder,
    milvus: IndexSettings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from biorag.retrieve import milvus_index

    path = tmp_path / "idx"
    _build(path, corpus_file, hash_embedder, milvus)
    real_push = milvus_index.MilvusIndex.push
    calls = {"n": 0}

    def killed_after_one_batch(self, store, batch_size=1000, bar=None):  # type: ignore[no-untyped-def]
        rows = store.chunk_rows_after(int(self._state()["sent_seq"]), 2)
        self.client.upsert(self.collection, [
            {"chunk_id": c, "doc_id": d, "terms": t,
             "dense": milvus_index.np.frombuffer(v, dtype="float32").tolist()}
            for _, c, d, t, v in rows
        ])  # fmt: skip
        calls["n"] += 1
        raise KeyboardInterrupt  # killed before the batch was recorded as sent

    monkeypatch.setattr(milvus_index.MilvusIndex, "push", killed_after_one_batch)
    with IndexDir(path, hash_embedder, index=milvus) as idx, pytest.raises(KeyboardInterrupt):
        idx.add(_more(6))
    monkeypatch.setattr(milvus_index.MilvusIndex, "push", real_push)
    with IndexDir(path, hash_embedder, index=milvus) as idx:
        idx.resume()  # what `biorag index build` again does
        assert idx.milvus.count() == idx.store.count_chunks() == 4 + 6
    assert calls["n"] == 1


def test_a_removal_cut_short_is_reconciled(
    tmp_path: Path, corpus_file: Path, hash_embedder: HashEmbedder, milvus: IndexSettings
) -> None:
    path = tmp_path / "idx"
    _build(path, corpus_file, hash_embedder, milvus)
    with IndexDir(path, hash_embedder, index=milvus) as idx:
        idx.store.remove_documents(idx.store.resolve_document_ids("1001"))  # the server missed it
        assert idx.milvus.count() == 4
        idx.resume()
        assert idx.milvus.count() == idx.store.count_chunks() == 3


def test_bad_milvus_settings_are_one_clear_error(
    tmp_path: Path, corpus_file: Path, hash_embedder: HashEmbedder, milvus: IndexSettings
) -> None:
    with pytest.raises(BioragError, match=r"set index.milvus_uri"):
        _build(tmp_path / "a", corpus_file, hash_embedder, IndexSettings(backend="milvus"))
    from devkit.servers import free_port

    down = IndexSettings(backend="milvus", milvus_uri=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(BioragError, match=r"index.milvus_uri .* is not reachable"):
        _build(tmp_path / "b", corpus_file, hash_embedder, down)
    _build(tmp_path / "local", corpus_file, hash_embedder, None)
    with pytest.raises(BioragError, match=r"keeps its search on disk"):
        IndexDir(tmp_path / "local", hash_embedder, index=milvus)
    _build(tmp_path / "remote", corpus_file, hash_embedder, milvus)
    with pytest.raises(BioragError, match=r"keeps its search in Milvus: set index.milvus_uri"):
        Searcher(tmp_path / "remote", hash_embedder)


def test_the_cli_builds_and_reports_a_milvus_index(
    tmp_path: Path, corpus_file: Path, milvus_live: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from biorag.cli.main import app

    monkeypatch.setenv("BIORAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BIORAG_PROGRESS", "0")
    env = {"BIORAG_INDEX_BACKEND": "milvus", "BIORAG_INDEX_MILVUS_URI": milvus_live}
    run = CliRunner().invoke
    out = tmp_path / "idx"
    r = run(app, ["index", "build", "--corpus", str(corpus_file), "--out", str(out), "--json"],
            env=env, catch_exceptions=False)  # fmt: skip
    assert r.exit_code == 0, r.output
    r = run(app, ["index", "stats", "--index", str(out), "--json"], env=env,
            catch_exceptions=False)  # fmt: skip
    stats = json.loads(r.stdout)
    assert stats["search_backend"]["rows"] == stats["chunks"] == len(DOCS)
    queries = tmp_path / "q.jsonl"
    queries.write_text(json.dumps({"id": "q1", "text": QUERY}) + "\n")
    trec = tmp_path / "run.trec"
    r = run(app, ["retrieve", "--index", str(out), "--queries", str(queries), "--level", "doc",
                  "--out", str(trec)], env=env, catch_exceptions=False)  # fmt: skip
    assert r.exit_code == 0, r.output
    assert trec.read_text().splitlines()[0].split()[2] == "1002"
    # the collection lost (another server, say): building again, as the search error says,
    # sends it again without embedding anything
    from pymilvus import MilvusClient

    MilvusClient(uri=milvus_live).drop_collection(stats["search_backend"]["collection"])
    r = run(app, ["index", "build", "--corpus", str(corpus_file), "--out", str(out), "--json"],
            env=env, catch_exceptions=False)  # fmt: skip
    assert r.exit_code == 0 and json.loads(r.stdout)["chunks_embedded"] == 0, r.output
    r = run(app, ["index", "stats", "--index", str(out), "--json"], env=env,
            catch_exceptions=False)  # fmt: skip
    assert json.loads(r.stdout)["search_backend"]["rows"] == len(DOCS)
    r = run(app, ["index", "stats", "--index", str(out)],
            env={"BIORAG_INDEX_MILVUS_URI": "http://127.0.0.1:1"})  # fmt: skip
    assert r.exit_code != 0 and "not reachable" in r.output and "Traceback" not in r.output


def test_a_collection_lost_on_the_server_is_sent_again(
    tmp_path: Path, corpus_file: Path, hash_embedder: HashEmbedder, milvus: IndexSettings
) -> None:
    path = tmp_path / "idx"
    _build(path, corpus_file, hash_embedder, milvus)
    with IndexDir(path, hash_embedder, index=milvus) as idx:
        idx.milvus.client.drop_collection(idx.milvus.collection)  # a new server, say
        # searching writes nothing: one clear line, and no empty collection left behind
        with pytest.raises(
            BioragError, match=r"has no collection .*building the index from its corpus"
        ):
            Searcher(path, hash_embedder, index=milvus)
        assert not idx.milvus.client.has_collection(idx.milvus.collection)
        idx.resume()
        assert idx.milvus.count() == idx.store.count_chunks() == 4
        # rows lost without the collection going: sent again too, without duplicates
        idx.milvus.client.delete(idx.milvus.collection, filter='doc_id != ""')
        idx.milvus.client.flush(idx.milvus.collection)
        idx.resume()
        assert idx.milvus.count() == 4
    s = Searcher(path, hash_embedder, index=milvus)
    assert s.search([QUERY], k=1, retriever="hybrid")[0][0].source_id == "1002"
    s.close()


def test_an_excluded_document_never_comes_back_from_milvus(
    tmp_path: Path, corpus_file: Path, hash_embedder: HashEmbedder, milvus: IndexSettings
) -> None:
    """An ask's exclusion (eval's own-document guard) holds on the Milvus backend too: the
    document that ranks first is left out of every retriever's and level's results and
    counted, and dense and hybrid results still fill k."""
    from biorag.retrieve.exclusion import DocExclusion

    _build(tmp_path / "remote", corpus_file, hash_embedder, milvus)
    remote = Searcher(tmp_path / "remote", hash_embedder, index=milvus)
    try:
        for level in ("chunk", "doc"):
            for retriever in ("bm25", "dense", "hybrid"):
                assert (
                    remote.search([QUERY], k=1, retriever=retriever, level=level)[0][0].source_id
                    == "1002"
                ), (retriever, level)
                ex = DocExclusion.of(["1002"])
                got = remote.search([QUERY], k=2, retriever=retriever, level=level, exclude=ex)[0]
                assert all(p.source_id != "1002" for p in got), (retriever, level)
                # BM25 matches only the documents holding a query term; the others fill k
                assert retriever == "bm25" or len(got) == 2, (retriever, level, got)
                assert ex.hits >= 1 and ex.found == {"1002"}, (retriever, level)
    finally:
        remote.close()


def test_abbreviation_expansion_reaches_milvus_and_local_only_settings_are_refused(
    tmp_path: Path, hash_embedder: HashEmbedder, milvus: IndexSettings
) -> None:
    docs = [
        Document.create(source_id="defines", text="Serum C-reactive protein (CRP) in children."),
        Document.create(source_id="long", text="C-reactive protein rises in appendicitis."),
        Document.create(source_id="far", text="Statins lower LDL cholesterol."),
    ]
    with IndexDir(tmp_path / "m", hash_embedder, name="m", index=milvus) as idx:
        idx.add(docs)
    plain = Searcher(tmp_path / "m", hash_embedder, index=milvus)
    assert [p.source_id for p in plain.search(["CRP"], k=3, retriever="bm25")[0]] == ["defines"]
    st = RetrievalSettings(abbreviations="corpus")
    s = Searcher(tmp_path / "m", hash_embedder, st, index=milvus)
    got = [p.source_id for p in s.search(["CRP"], k=3, retriever="bm25", level="doc")[0]]
    assert set(got) == {"defines", "long"}
    for setting in ({"prf": "rm3"}, {"second_encoder": "all-mpnet-base-v2"}):
        with pytest.raises(BioragError) as e:
            Searcher(tmp_path / "m", hash_embedder, RetrievalSettings(**setting), index=milvus)
        (name,) = setting
        assert f"retrieval.{name} is not available with the Milvus backend" in str(e.value)
