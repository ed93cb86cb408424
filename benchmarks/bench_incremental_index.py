"""Incremental local indexes: what adding and removing documents costs at N chunks, next to the
full rebuild an add cost before segments, and what searching segments costs.

The corpus is synthetic, as in ``bench_retrieval_speed.py``: N documents of 40 words drawn
Zipf-wise from the BioASQ snippet vocabulary (one chunk each), embedded by a random unit-vector
embedder (no model: the figures are the index's, not an encoder's). Steps, each timed:

1. build: ``IndexDir.add`` of the N documents (store, chunk, embed, index stages).
2. add: ``IndexDir.add`` of ``--add`` more documents (one new segment).
3. the rebuild an add cost before: ``BM25Index.build`` + ``DenseIndex.build`` over every chunk
   (what ``rebuild_search_indexes`` ran on each add and removal).
4. search: p50/p95 of single queries (BioASQ question bodies) through ``Searcher`` over the
   segments, next to the one-piece indexes of step 3; top-10 agreement between them.
5. remove: ``IndexDir.remove`` of ``--add`` documents (rows marked deleted).

    python benchmarks/bench_incremental_index.py --n 100000 \
        --out benchmarks/results/incremental_index_100k.json
"""

from __future__ import annotations

import argparse
import sys

from _bench import peak_gb, pin_threads, provenance, reset_peak, rss_gb

_THREADS = pin_threads()

import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from bench_retrieval_speed import latencies, load_bioasq, recall_at, synthetic_texts  # noqa: E402
from biorag.config import RetrievalSettings  # noqa: E402
from biorag.corpus.models import Document  # noqa: E402
from biorag.retrieve.bm25 import BM25Index  # noqa: E402
from biorag.retrieve.dense import DenseIndex  # noqa: E402
from biorag.retrieve.fusion import reciprocal_rank_fusion  # noqa: E402
from biorag.retrieve.index import IndexDir  # noqa: E402
from biorag.retrieve.search import Searcher  # noqa: E402
from biorag.util.files import write_json_atomic  # noqa: E402

DEPTH = 100


class RandomEmbedder:
    """Random unit 384-d vectors (seeded): the index's costs without an encoder's."""

    model_id = "bench:random-384"
    dim = 384

    def __init__(self, seed: int = 2) -> None:
        self.rng = np.random.default_rng(seed)

    def embed(self, texts: list[str], **_: Any) -> np.ndarray:
        x = self.rng.standard_normal((len(texts), self.dim), dtype=np.float32)
        return x / np.linalg.norm(x, axis=1, keepdims=True)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def docs_of(texts: list[str], start: int) -> list[Document]:
    return [Document.create(source_id=f"c{start + i}", text=t) for i, t in enumerate(texts)]


def timed_add(idx: IndexDir, docs: list[Document]) -> dict[str, Any]:
    t = time.perf_counter()
    rep = idx.add(docs, batch_size=2048)
    total = time.perf_counter() - t
    return {"total_s": round(total, 2), **{k: round(v, 2) for k, v in rep.seconds.items()}}


def same_scores(a: list[list[Any]], b: list[list[Any]], k: int = 10) -> float:
    """Share of queries whose top-k score lists agree within 1e-4 (ids may differ among tied
    scores: bm25s sums in float32, segments in float64 with ties in storage order)."""

    def close(x: list[Any], y: list[Any]) -> bool:
        if len(x) != len(y):
            return False
        pairs = zip(x, y, strict=True)
        return all(abs(h.score - g.score) <= 1e-4 * max(1.0, g.score) for h, g in pairs)

    vals = [close(x[:k], y[:k]) for x, y in zip(a, b, strict=True)]
    return round(float(np.mean(vals)), 4)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="chunks in the base index")
    ap.add_argument("--add", type=int, default=1000, help="documents added, then removed")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--dir", default=None, help="where to build (default: a temporary dir)")
    ap.add_argument("--threads", default=_THREADS)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    out: dict[str, Any] = {
        "n": args.n,
        "add": args.add,
        "threads": args.threads,
        **provenance(),
    }
    _, questions, _ = load_bioasq()
    nq = min(args.queries, len(questions))
    texts = synthetic_texts(args.n + args.add, 40, seed=1)
    base, extra = docs_of(texts[: args.n], 0), docs_of(texts[args.n :], args.n)
    del texts
    root = Path(args.dir or tempfile.mkdtemp(prefix="bench-incr-"))
    path = root / "idx"
    shutil.rmtree(path, ignore_errors=True)
    emb = RandomEmbedder()
    settings = RetrievalSettings()
    try:
        with IndexDir(path, emb, retrieval=settings) as idx:
            log(f"building {args.n} documents")
            reset_peak()
            out["build"] = {**timed_add(idx, base), "peak_gb": peak_gb(2)}
            log(f"build: {out['build']}")
            del base
            out["add"] = timed_add(idx, extra)
            log(f"add {args.add}: {out['add']}")
            out["segments_after_add"] = json.loads((path / "segments.json").read_text())["segments"]
            for s in out["segments_after_add"]:
                s.pop("deleted", None)
            ids, chunk_texts = idx.store.all_chunk_texts()
            t = time.perf_counter()
            bm25 = BM25Index.build(ids, chunk_texts, k1=settings.bm25_k1, b=settings.bm25_b)
            bm25_s = time.perf_counter() - t
            del chunk_texts
            vids, vecs = idx.store.all_vectors(emb.dim)
            t = time.perf_counter()
            dense = DenseIndex.build(vids, vecs, hnsw_min_size=settings.hnsw_min_size)
            dense_s = time.perf_counter() - t
            del vecs
            out["full_rebuild"] = {
                "bm25_s": round(bm25_s, 2),
                "dense_s": round(dense_s, 2),
                "dense_kind": dense.kind,
                "total_s": round(bm25_s + dense_s, 2),
            }
            log(f"the rebuild an add cost before: {out['full_rebuild']}")
        qvecs = RandomEmbedder(seed=3).embed(questions[:nq])
        reset_peak()
        t = time.perf_counter()
        searcher = Searcher(path, lambda: emb, settings)
        out["searcher_open"] = {"s": round(time.perf_counter() - t, 2), "rss_gb": rss_gb(2)}
        seg_bm25, seg_dense = searcher.bm25, searcher.dense

        def hybrid(lex: Any, sem: Any, i: int) -> Any:
            return reciprocal_rank_fusion(
                [lex.search([questions[i]], DEPTH)[0], sem.search(qvecs[i], DEPTH)[0]]
            )[:10]

        seg_lex = seg_bm25.search(questions[:nq], 10)
        one_lex = bm25.search(questions[:nq], 10)
        out["search"] = {
            "segments": {
                "bm25": latencies(lambda i: seg_bm25.search([questions[i]], DEPTH), nq),
                "dense": latencies(lambda i: seg_dense.search(qvecs[i], DEPTH), nq),
                "hybrid": latencies(lambda i: hybrid(seg_bm25, seg_dense, i), nq),
            },
            "one_piece": {
                "bm25": latencies(lambda i: bm25.search([questions[i]], DEPTH), nq),
                "dense": latencies(lambda i: dense.search(qvecs[i], DEPTH), nq),
                "hybrid": latencies(lambda i: hybrid(bm25, dense, i), nq),
            },
            "top10_agreement": {
                "bm25": recall_at(seg_lex, one_lex),
                "dense": recall_at(seg_dense.search(qvecs, 10), dense.search(qvecs, 10)),
            },
            "top10_same_scores": {"bm25": same_scores(seg_lex, one_lex)},
        }
        log(f"search: {out['search']}")
        searcher.close()
        with IndexDir(path, emb, retrieval=settings) as idx:
            t = time.perf_counter()
            rep = idx.remove([d.source_id for d in extra])
            out["remove"] = {
                "total_s": round(time.perf_counter() - t, 2),
                "documents_removed": rep.documents_removed,
            }
        log(f"remove {args.add}: {out['remove']}")
    finally:
        if not args.dir:
            shutil.rmtree(root, ignore_errors=True)
    write_json_atomic(args.out, out)
    log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
