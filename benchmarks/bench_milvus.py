"""Milvus (``index.backend = "milvus"``) next to the local backend, in one run.

(a) quality: the PubMedQA (1,000 abstracts, 500 test questions) and BioASQ (pooled 7b-11b gold
    snippets, 327 11b questions) indexes of bench_retrieval_quality.py, searched at document
    level (k=10) by both backends with each retriever; R@10 and MRR@10 (ir_measures through
    ``biorag.retrieve.trec.evaluate_run``) side by side. The Milvus index is a copy of the same
    corpus store (the same chunks and vectors) sent to a collection by ``IndexDir``.
(b) scale: N synthetic chunks (random unit 384-d vectors, Zipf texts of 40 words, as in
    bench_retrieval_speed.py) sent through ``MilvusIndex.push`` in batches of 1,000 (build
    time), then per-query p50/p95 of bm25, dense and hybrid (top 100, fused in the server)
    against the local ``BM25Index`` + ``DenseIndex`` (HNSW) + fusion built from the same data,
    with the resident memory of this process and of the server.

Starts milvus-lite in server mode itself (scripts/install-milvus-lite.sh installs it), or uses
``--uri``. Threads: --threads for FAISS, torch and BLAS in this process.

    python benchmarks/bench_milvus.py --n-synthetic 100000 --out benchmarks/results/milvus.json
"""

from __future__ import annotations

import argparse
import sys

from _bench import pin_threads, reset_peak, rss_gb

_THREADS = pin_threads()

import json  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DEPTH = 100


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def server_rss_gb(pid: int | None) -> float | None:
    if pid is None:
        return None
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1e6, 2)
    return None


def quality(uri: str, cache_dir: Path, out: dict[str, Any]) -> None:
    from bench_retrieval_quality import (
        bioasq_queries,
        ensure_index,
        make_embedder,
        pubmedqa_queries,
    )
    from biorag.config import IndexSettings
    from biorag.corpus.store import CorpusStore
    from biorag.retrieve.index import IndexDir
    from biorag.retrieve.search import Searcher
    from biorag.retrieve.trec import evaluate_run

    emb = make_embedder(cache_dir)
    cfg = IndexSettings(backend="milvus", milvus_uri=uri)
    out["quality"] = []
    for ds in ("pubmedqa", "bioasq"):
        local_path, _ = ensure_index(ds, cache_dir, emb)
        remote = cache_dir / "index" / f"{ds}_milvus"
        if not (remote / "manifest.json").is_file():
            remote.mkdir(parents=True, exist_ok=True)
            shutil.copy(local_path / "corpus.sqlite", remote / "corpus.sqlite")
        t = time.perf_counter()
        with IndexDir(remote, emb, name=ds, index=cfg) as idx:
            idx.resume()  # sends what the collection lacks (all of it the first time)
            chunks = idx.store.count_chunks()
        send_s = time.perf_counter() - t
        if ds == "pubmedqa":
            qs = pubmedqa_queries()["test"]
        else:
            store = CorpusStore(local_path / "corpus.sqlite")
            pmids = {d["source_id"] for d in store.list_documents(0, 10**7)}
            store.close()
            qs = bioasq_queries(pmids, restrict=True)["test"]
        server_fused = cfg.model_copy(update={"milvus_fusion": "server"})
        searchers = {
            "local": Searcher(local_path, emb),
            "milvus": Searcher(remote, emb, index=cfg),  # hybrid fused by biorag
            "milvus_server_fusion": Searcher(remote, emb, index=server_fused),
        }
        for retriever in ("bm25", "dense", "hybrid"):
            r: dict[str, Any] = {"dataset": ds, "retriever": retriever, "queries": len(qs.qids)}
            for name, s in searchers.items():
                if name == "milvus_server_fusion" and retriever != "hybrid":
                    continue
                t = time.perf_counter()
                hits = s.search(qs.texts, k=10, retriever=retriever, level="doc")
                secs = time.perf_counter() - t
                run = {
                    q: [(p.source_id, p.score) for p in h]
                    for q, h in zip(qs.qids, hits, strict=True)
                }
                m = evaluate_run(run, qs.qrels, ["R@10", "RR@10"])
                r[name] = {"R@10": round(m["R@10"], 4), "MRR@10": round(m["RR@10"], 4),
                           "seconds": round(secs, 1)}  # fmt: skip
            r["delta_R@10"] = round(r["milvus"]["R@10"] - r["local"]["R@10"], 4)
            if "milvus_server_fusion" in r:
                r["delta_R@10_server_fusion"] = round(
                    r["milvus_server_fusion"]["R@10"] - r["local"]["R@10"], 4
                )
            r["chunks"], r["milvus_send_s"] = chunks, round(send_s, 1)
            out["quality"].append(r)
            log(json.dumps(r))
        for s in searchers.values():
            s.close()


class ArrayStore:
    """What ``MilvusIndex.push`` reads from a corpus store, served from arrays."""

    def __init__(self, texts: list[str], vectors: np.ndarray) -> None:
        self.texts, self.vectors = texts, vectors

    def chunk_rows_after(self, seq: int, limit: int) -> list[tuple[int, str, str, str, bytes]]:
        end = min(seq + limit, len(self.texts))
        return [
            (i + 1, f"c{i}", f"d{i // 3}", self.texts[i], self.vectors[i].tobytes())
            for i in range(seq, end)
        ]


def scale(uri: str, n: int, nq: int, pid: int | None, out: dict[str, Any]) -> None:
    from bench_retrieval_speed import latencies, load_bioasq, random_unit, synthetic_texts
    from biorag.retrieve.bm25 import BM25Index
    from biorag.retrieve.dense import DenseIndex
    from biorag.retrieve.fusion import convex_score_fusion
    from biorag.retrieve.milvus_index import MilvusIndex
    from biorag.util.progress import progress_bar

    _, questions, _ = load_bioasq()
    questions = questions[:nq]
    texts = synthetic_texts(n, 40, seed=1)
    vectors = random_unit(n, 384, seed=2)
    qvecs = random_unit(len(questions), 384, seed=3)
    rows: dict[str, Any] = {"n": n, "queries": len(questions)}
    tmp = Path(tempfile.mkdtemp(prefix="bench_milvus_"))
    mi = MilvusIndex(tmp, uri, f"bench_synthetic_{n}", 384)
    mi.drop()
    reset_peak()
    t = time.perf_counter()
    mi.ensure()
    bar = progress_bar(n, "sending to Milvus", unit="chunk")
    mi.push(ArrayStore(texts, vectors), bar=bar)
    bar.close()
    rows["milvus_build_s"] = round(time.perf_counter() - t, 1)
    rows["milvus_rows"] = mi.count()
    rows["client_rss_gb_after_build"] = rss_gb(2)
    rows["server_rss_gb_after_build"] = server_rss_gb(pid)
    log(f"milvus build: {rows['milvus_build_s']} s")
    time.sleep(5)  # the server builds its HNSW segment index in the background after the flush
    for retriever in ("bm25", "dense", "hybrid"):
        rows[f"milvus_{retriever}"] = latencies(
            lambda i, r=retriever: mi.rank([questions[i]], qvecs[i : i + 1], DEPTH, r), nq
        )
        log(f"milvus {retriever}: {rows[f'milvus_{retriever}']}")
    rows["server_rss_gb_after_search"] = server_rss_gb(pid)
    ids = [f"c{i}" for i in range(n)]
    t = time.perf_counter()
    bm25 = BM25Index.build(ids, texts)
    dense = DenseIndex.build(ids, vectors, kind="hnsw")
    rows["local_build_s"] = round(time.perf_counter() - t, 1)
    rows["local_bm25"] = latencies(lambda i: bm25.search([questions[i]], DEPTH), nq)
    rows["local_dense"] = latencies(lambda i: dense.search(qvecs[i], DEPTH), nq)
    rows["local_hybrid"] = latencies(
        lambda i: convex_score_fusion(
            [bm25.search([questions[i]], DEPTH)[0], dense.search(qvecs[i], DEPTH)[0]],
            [0.5, 0.5], limit=DEPTH,
        ),
        nq,
    )  # fmt: skip
    rows["client_rss_gb_with_local"] = rss_gb(2)
    out["scale"] = rows
    log(json.dumps(rows))
    mi.drop()
    shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--uri", help="a running Milvus server (default: start milvus-lite)")
    ap.add_argument("--n-synthetic", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--skip-quality", action="store_true")
    ap.add_argument("--cache-dir", type=Path, default=ROOT / "benchmarks" / ".cache")
    ap.add_argument("--threads", default=_THREADS)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "milvus.json")
    args = ap.parse_args()
    server = None
    uri, pid = args.uri, None
    if uri is None:
        from devkit.milvus import MilvusLite, milvus_lite_command

        command, why = milvus_lite_command()
        if command is None:
            raise SystemExit(why)
        data = Path(tempfile.mkdtemp(prefix="milvus_bench_")) / "data"
        server = MilvusLite(command, data)
        server.wait_ready()
        uri, pid = server.uri, server.proc.pid
    out: dict[str, Any] = {"uri": uri, "threads": args.threads}
    try:
        if not args.skip_quality:
            quality(uri, args.cache_dir, out)
        if args.n_synthetic:
            scale(uri, args.n_synthetic, args.queries, pid, out)
    finally:
        if server is not None:
            server.stop()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
