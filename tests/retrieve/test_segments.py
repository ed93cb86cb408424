"""Incremental local indexes: segments added, merged, marked deleted and compacted give the
rankings of one index built from the live documents; killed updates and old layouts recover."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from tests.conftest import HashEmbedder

from biorag.config import RetrievalSettings
from biorag.corpus.models import Document
from biorag.retrieve import segment_writer
from biorag.retrieve.bm25 import BM25Index, Tokenizer
from biorag.retrieve.bm25_terms import BM25Scorer, TermSegment
from biorag.retrieve.index import IndexDir, index_stats
from biorag.retrieve.search import Searcher
from biorag.retrieve.segment_writer import merge_start

WORDS = (
    "metformin insulin glucose statin ldl cholesterol aspirin platelet bleeding kidney liver "
    "tumour breast lung cancer trial cohort mice dose risk mortality infection vaccine antibody "
    "receptor kinase pathway gene mutation expression protein cell"
).split()
QUERIES = [
    "metformin glucose insulin",
    "statin ldl cholesterol risk",
    "aspirin platelet bleeding",
    "lung cancer mutation kinase",
    "vaccine antibody infection mortality",
]


def corpus(n: int, seed: int = 0) -> list[Document]:
    rng = random.Random(seed)
    return [
        Document.create(
            source_id=f"d{seed}-{i}",
            text=" ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 30))) + ".",
        )
        for i in range(n)
    ]


def test_scores_equal_one_bm25s_index_of_the_live_rows():
    texts = [d.text for d in corpus(120)]
    ids = [str(i) for i in range(120)]
    k1, b = 0.9, 0.5
    tok = Tokenizer()
    parts = [TermSegment.build(texts[a : a + 40]) for a in (0, 40, 80)]
    deleted = [None, np.zeros(40, bool), np.zeros(40, bool)]
    deleted[1][[3, 7]] = True  # type: ignore[index]
    deleted[2][[0]] = True  # type: ignore[index]
    live = [i for i in range(120) if not (40 <= i < 80 and i - 40 in (3, 7)) and i != 80]
    whole = BM25Index.build([ids[i] for i in live], [texts[i] for i in live], k1=k1, b=b)
    scorer = BM25Scorer(list(zip(parts, deleted, strict=True)), k1, b)
    for q in QUERIES:
        found = scorer.scores(tok(q))
        got = {
            str(seg * 40 + int(r)): float(s)
            for seg, (rows, scores) in enumerate(found)
            for r, s in zip(rows, scores, strict=True)
        }
        want = {h.id: h.score for h in whole.search([q], 200)[0]}
        assert set(got) == set(want)
        assert all(abs(got[i] - want[i]) <= 1e-4 * max(1.0, want[i]) for i in want)


def test_merged_and_compacted_segments_keep_their_postings():
    texts = [d.text for d in corpus(60)]
    one = TermSegment.build(texts)
    a, b = TermSegment.build(texts[:25]), TermSegment.build(texts[25:])
    merged = TermSegment.merge([(a, None), (b, None)])
    for term in one.terms:
        assert np.array_equal(one.postings(term)[0], merged.postings(term)[0])
        assert np.array_equal(one.postings(term)[1], merged.postings(term)[1])
    keep = np.ones(60, bool)
    keep[[0, 10, 59]] = False
    kept = TermSegment.merge([(one, keep)])
    again = TermSegment.build([t for t, k in zip(texts, keep, strict=True) if k])
    assert kept.n == 57 and np.array_equal(kept.lengths, again.lengths)
    for term in again.terms:
        assert np.array_equal(kept.postings(term)[0], again.postings(term)[0])


@pytest.mark.parametrize(
    ("sizes", "start"),
    [([100], None), ([100, 10], None), ([100, 10, 10], 1), ([20, 10, 10], 0), ([40, 20, 10], None)],
)
def test_the_newest_segments_merge_like_a_binary_counter(sizes, start):
    assert merge_start(sizes) == start


def test_at_most_max_segments_stay(monkeypatch):
    monkeypatch.setattr(segment_writer, "MAX_SEGMENTS", 3)
    assert merge_start([1000, 100, 10, 1]) == 2


def rankings(path, retriever="hybrid"):
    s = Searcher(path, HashEmbedder())
    try:
        return [
            [(p.chunk_id, round(p.score, 5)) for p in hits]
            for hits in s.search(QUERIES, k=8, retriever=retriever)
        ]
    finally:
        s.close()


def state(path):
    return json.loads((path / "segments.json").read_text())


def test_adds_and_removals_rank_as_one_build_of_the_live_documents(tmp_path):
    docs = corpus(90)
    inc = tmp_path / "inc"
    with IndexDir(inc, HashEmbedder()) as idx:
        for a in range(0, 90, 15):  # six adds: segments written and merged
            idx.add(docs[a : a + 15])
        names_before = [s["name"] for s in state(inc)["segments"]]
        idx.remove([docs[3].source_id, docs[50].source_id, docs[88].source_id])
    st = state(inc)
    assert sum(s["rows"] - len(s["deleted"]) for s in st["segments"]) == 87
    assert len(st["segments"]) <= 3 and names_before  # merged, never one per add
    live = [d for i, d in enumerate(docs) if i not in (3, 50, 88)]
    with IndexDir(tmp_path / "one", HashEmbedder()) as idx:
        idx.add(live)
    for retriever in ("bm25", "dense", "hybrid"):
        assert rankings(inc, retriever) == rankings(tmp_path / "one", retriever), retriever
    removed = {d.id for d in (docs[3], docs[50], docs[88])}
    s = Searcher(inc, HashEmbedder())
    hits = s.search([docs[50].text], k=90, retriever="bm25")[0]
    assert not removed & {p.doc_id for p in hits}
    s.close()


def test_an_add_writes_only_a_segment_of_what_it_adds(tmp_path):
    docs = corpus(64)
    path = tmp_path / "i"
    with IndexDir(path, HashEmbedder()) as idx:
        idx.add(docs[:60])
        first = state(path)["segments"][0]
        stamp = (path / "segments" / first["name"] / "bm25_rows.npy").stat().st_mtime_ns
        idx.add(docs[60:])
    segs = state(path)["segments"]
    assert segs[0]["name"] == first["name"] and len(segs) == 2
    assert segs[1]["rows"] < 10 and segs[0]["rows"] == first["rows"]
    assert (path / "segments" / first["name"] / "bm25_rows.npy").stat().st_mtime_ns == stamp


def test_a_segment_mostly_deleted_is_rewritten_without_its_rows(tmp_path):
    docs = corpus(40)
    path = tmp_path / "i"
    with IndexDir(path, HashEmbedder()) as idx:
        idx.add(docs)
        idx.remove([d.source_id for d in docs[:8]])
        assert state(path)["segments"][0]["deleted"]  # 8 of 40: marked only
        idx.remove([d.source_id for d in docs[8:12]])
    seg = state(path)["segments"][0]
    assert seg["deleted"] == [] and seg["rows"] == 28
    assert index_stats(path)["segments"] == {"count": 1, "rows": [28], "deleted_rows": 0}
    assert len(list((path / "segments").iterdir())) == 1
    with IndexDir(tmp_path / "one", HashEmbedder()) as idx:
        idx.add(docs[12:])
    assert rankings(path) == rankings(tmp_path / "one")


def test_a_killed_update_is_finished_by_the_next(tmp_path, monkeypatch):
    docs = corpus(30)
    path = tmp_path / "i"
    with IndexDir(path, HashEmbedder()) as idx:
        idx.add(docs[:20])
    real = segment_writer.write_json_atomic

    def killed(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(segment_writer, "write_json_atomic", killed)
    with IndexDir(path, HashEmbedder()) as idx, pytest.raises(KeyboardInterrupt):
        idx.add(docs[20:])  # its segment is written, the list not committed
    assert len(list((path / "segments").iterdir())) == 2
    monkeypatch.setattr(segment_writer, "write_json_atomic", real)
    assert len(state(path)["segments"]) == 1
    with IndexDir(path, HashEmbedder()) as idx:
        idx.add([])
    assert sum(s["rows"] for s in state(path)["segments"]) == 30
    with IndexDir(tmp_path / "one", HashEmbedder()) as idx:
        idx.add(docs)
    assert rankings(path) == rankings(tmp_path / "one")


def test_a_removal_cut_short_is_reconciled(tmp_path):
    docs = corpus(30)
    path = tmp_path / "i"
    with IndexDir(path, HashEmbedder()) as idx:
        idx.add(docs)
        idx.store.remove_documents([docs[5].id])  # the store forgot it, the segments did not
        idx.add([])
    assert [len(s["deleted"]) for s in state(path)["segments"]] == [1]
    s = Searcher(path, HashEmbedder())
    assert docs[5].id not in {p.doc_id for p in s.search([docs[5].text], 30, "bm25")[0]}
    s.close()


def test_lost_segments_are_rebuilt(tmp_path):
    docs = corpus(20)
    path = tmp_path / "i"
    with IndexDir(path, HashEmbedder()) as idx:
        idx.add(docs)
    st = state(path)
    st["segments"] = []
    (path / "segments.json").write_text(json.dumps(st))
    with IndexDir(path, HashEmbedder()) as idx:
        idx.add([])
    assert sum(s["rows"] for s in state(path)["segments"]) == 20


def test_an_index_of_the_earlier_layout_is_searched_then_moved_to_segments(tmp_path):
    from biorag.retrieve.dense import DenseIndex

    docs = corpus(25)
    path = tmp_path / "old"
    with IndexDir(path, HashEmbedder()) as idx:
        idx.add(docs)
        ids, texts = idx.store.all_chunk_texts()
        _, vectors = idx.store.all_vectors(64)
    st = RetrievalSettings()
    BM25Index.build(ids, texts, k1=st.bm25_k1, b=st.bm25_b).save(path / "bm25")
    DenseIndex.build(ids, vectors).save(path / "dense")
    (path / "segments.json").unlink()
    import shutil

    shutil.rmtree(path / "segments")
    before = rankings(path)
    with IndexDir(path, HashEmbedder()) as idx:
        idx.add([])
    assert not (path / "bm25").exists() and not (path / "dense").exists()
    assert [[c for c, _ in q] for q in rankings(path)] == [[c for c, _ in q] for q in before]


def test_hnsw_segments_grow_by_adding_to_their_graph(tmp_path):
    docs = corpus(48)
    path = tmp_path / "i"
    hnsw = RetrievalSettings(dense_index="hnsw")
    with IndexDir(path, HashEmbedder(), retrieval=hnsw) as idx:
        for a in range(0, 48, 12):
            idx.add(docs[a : a + 12])
    segs = state(path)["segments"]
    assert len(segs) == 1 and segs[0]["rows"] == 48
    meta = json.loads((path / "segments" / segs[0]["name"] / "dense" / "meta.json").read_text())
    assert meta["kind"] == "hnsw" and meta["params"]["m"] == 32
    s = Searcher(path, HashEmbedder())
    top = s.search([docs[30].text], k=1, retriever="dense")[0][0]
    assert top.doc_id == docs[30].id or top.score > 0.999
    s.close()


@pytest.mark.parametrize(
    "damaged",
    ["segments/s000001/bm25_rows.npy", "segments/s000001/dense/ids.json", "segments.json"],
)
def test_a_damaged_index_is_rebuilt_by_the_next_add(tmp_path, damaged):
    from biorag.errors import DamagedFileError

    docs = corpus(30)
    path = tmp_path / "i"
    with IndexDir(path, HashEmbedder()) as idx:
        idx.add(docs)
    want = rankings(path)
    (path / damaged).write_bytes(b"\x00junk\xff" * 8)
    with pytest.raises(DamagedFileError):
        rankings(path)
    with IndexDir(path, HashEmbedder()) as idx:  # what the error advises
        idx.add([])
    assert rankings(path) == want


def test_a_second_writer_waits_for_the_first(tmp_path):
    import threading

    from biorag.retrieve.segment_writer import write_lock

    path = tmp_path / "i"
    order: list[str] = []
    with write_lock(path):
        t = threading.Thread(target=lambda: IndexDir(path, HashEmbedder()).add(corpus(5)))
        t.start()
        t.join(timeout=1.0)
        assert t.is_alive()  # blocked on the lock
        order.append("first done")
    t.join(timeout=30)
    assert not t.is_alive() and order == ["first done"]
    assert sum(s["rows"] for s in state(path)["segments"]) == 5


def test_a_chunk_removed_halfway_then_added_again_keeps_its_newest_row(tmp_path):
    docs = corpus(20)
    path = tmp_path / "i"
    with IndexDir(path, HashEmbedder()) as idx:
        idx.add(docs)
        idx.store.remove_documents([docs[4].id])  # a removal cut short before the segments
        idx.add([docs[4]])  # added again: a new row beside the stale one, then reconciled
    segs = state(path)["segments"]
    assert sum(s["rows"] - len(s["deleted"]) for s in segs) == 20
    s = Searcher(path, HashEmbedder())
    hits = s.search([docs[4].text], 20, "bm25")[0]
    assert [p.doc_id for p in hits].count(docs[4].id) == 1
    s.close()
    first_ids = json.loads((path / "segments" / segs[0]["name"] / "dense" / "ids.json").read_text())
    stale = [r for r, c in enumerate(first_ids) if c.startswith(docs[4].id)]
    assert stale and set(stale) <= set(segs[0]["deleted"])


def test_ivf_segments_are_built_for_their_merged_size(tmp_path):
    from biorag.retrieve.dense import ivf_params

    docs = corpus(400)
    path = tmp_path / "i"
    ivf = RetrievalSettings(dense_index="ivf")
    with IndexDir(path, HashEmbedder(), retrieval=ivf) as idx:
        for a in range(0, 400, 100):
            idx.add(docs[a : a + 100])
    segs = state(path)["segments"]
    assert len(segs) == 1 and segs[0]["rows"] == 400
    meta = json.loads((path / "segments" / segs[0]["name"] / "dense" / "meta.json").read_text())
    assert meta["params"]["nlist"] == ivf_params(400)[0]
