"""Retrieval speed: index build throughput and per-query latency of BM25, dense and hybrid (RRF).

(a) real: the distinct BioASQ gold snippets (Task*BGoldenEnriched), embedded with the bundled
    all-MiniLM-L6-v2 (vectors cached in benchmarks/.cache/), queried with the question bodies;
    also gold-snippet recall@10 per retriever and ANN recall@10 against exact search.
(b) synthetic: N (default 1M) chunks; random unit 384-d vectors for the dense part, texts of
    40 words drawn Zipf-wise from the snippet vocabulary for BM25; the same questions as queries.
    Every dense kind (flat, hnsw, ivf) side by side, and exact search at smaller sizes.

Latency is per single query (p50/p95 over --queries queries, after 10 warm-up ones); hybrid =
BM25 top-100 + dense top-100 (precomputed query vector) + RRF -> top 10; the query embedding
time is reported separately. "peak GB" is the process's peak RSS during that stage
(VmHWM, reset before each stage). Threads: --threads for FAISS, torch and BLAS.

    python benchmarks/bench_retrieval_speed.py --out benchmarks/results/retrieval_speed.json
"""

from __future__ import annotations

import argparse
import os
import sys

from _bench import peak_gb, pin_threads, reset_peak, rss_gb

_THREADS = pin_threads()

import collections  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import re  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from biorag.retrieve.bm25 import BM25Index  # noqa: E402
from biorag.retrieve.dense import DenseIndex  # noqa: E402
from biorag.retrieve.fusion import reciprocal_rank_fusion  # noqa: E402
from biorag.retrieve.hits import Hit  # noqa: E402

ROOT = Path(__file__).resolve().parent
BIOASQ_GLOB = "/work/shared/data/mirage/rawdata/bioasq/Task*BGoldenEnriched/*.json"
DEPTH, FINAL_K = 100, 10
ROWS: list[dict[str, Any]] = []


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def latencies(fn: Callable[[int], Any], n: int, warmup: int = 10) -> dict[str, float]:
    for i in range(min(warmup, n)):
        fn(i)
    ts = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        ts.append(time.perf_counter() - t)
    a = np.asarray(ts) * 1000
    return {
        "p50_ms": round(float(np.median(a)), 3),
        "p95_ms": round(float(np.percentile(a, 95)), 3),
    }


def row(scale: str, stage: str, **kw: Any) -> dict[str, Any]:
    r = {"scale": scale, "stage": stage, **kw}
    ROWS.append(r)
    log(" ".join(f"{k}={v}" for k, v in r.items()))
    return r


def recall_at(approx: list[list[Hit]], exact: list[list[Hit]], k: int = 10) -> float:
    vals = [
        len({h.id for h in a[:k]} & {h.id for h in e[:k]}) / max(1, min(k, len(e)))
        for a, e in zip(approx, exact, strict=True)
    ]
    return round(float(np.mean(vals)), 4)


def load_bioasq() -> tuple[list[str], list[str], list[set[str]]]:
    """Distinct snippet texts (sorted), question bodies, and each question's gold snippets."""
    snippets: set[str] = set()
    questions: list[str] = []
    gold: list[set[str]] = []
    for path in sorted(glob.glob(BIOASQ_GLOB)):
        with open(path, encoding="utf-8") as f:
            for q in json.load(f)["questions"]:
                texts = {s["text"] for s in q.get("snippets", []) if s.get("text")}
                snippets |= texts
                if q.get("body") and texts:
                    questions.append(q["body"])
                    gold.append(texts)
    return sorted(snippets), questions, gold


def hybrid_fn(bm25: BM25Index, dense: DenseIndex, queries: list[str], qvecs: np.ndarray):
    def run(i: int) -> list[Hit]:
        lexical = bm25.search([queries[i]], DEPTH)[0]
        semantic = dense.search(qvecs[i], DEPTH)[0]
        return reciprocal_rank_fusion([lexical, semantic], k=60, limit=FINAL_K)

    return run


def bench_dense_kinds(
    scale: str,
    ids: list[str],
    vectors: np.ndarray,
    qvecs: np.ndarray,
    kinds: list[str],
    bm25: BM25Index,
    queries: list[str],
    nq: int,
    keep: bool = False,
) -> dict[str, DenseIndex]:
    """Build each kind, time its queries and the hybrid, recall@10 against flat."""
    exact: list[list[Hit]] | None = None
    kept: dict[str, DenseIndex] = {}
    for kind in ["flat", *[k for k in kinds if k != "flat"]]:
        reset_peak()
        before = rss_gb(2)
        index, secs = timed(lambda kind=kind: DenseIndex.build(ids, vectors, kind=kind))
        extra = {}
        if kind == "hnsw":
            extra = {"params": f"M=32 efC={index.params['ef_construction']} ef={index.ef_search}"}
        elif kind == "ivf":
            extra = {"params": f"nlist={index.params['nlist']} nprobe={index.nprobe}"}
        results = index.search(qvecs[:nq], FINAL_K)
        if kind == "flat":
            exact = results
        lat = latencies(lambda i, index=index: index.search(qvecs[i], DEPTH), nq)
        row(
            scale,
            f"dense {kind} build+search",
            n=len(ids),
            build_s=round(secs, 2),
            build_per_s=round(len(ids) / max(secs, 1e-9)),
            **lat,
            recall10_vs_flat=recall_at(results, exact) if exact else None,
            peak_gb=peak_gb(2),
            index_rss_gb=round(rss_gb(2) - before, 2),
            **extra,
        )
        hyb = latencies(hybrid_fn(bm25, index, queries, qvecs), nq)
        row(scale, f"hybrid bm25+{kind}+rrf", n=len(ids), **hyb)
        if keep and kind in kinds:
            kept[kind] = index
        del index
    return kept


def real_part(args: argparse.Namespace, out: dict[str, Any]) -> None:
    from biorag.embed.cache import CachedEmbedder
    from biorag.embed.st_embedder import SentenceTransformerEmbedder

    snippets, questions, gold = load_bioasq()
    if args.max_snippets:
        snippets = snippets[: args.max_snippets]
    scale = f"real {len(snippets) // 1000}k"
    ids = [f"s{i}" for i in range(len(snippets))]
    id_of = {t: i for t, i in zip(snippets, ids, strict=True)}
    nq = min(args.queries, len(questions))
    out["real"] = {"n_snippets": len(snippets), "n_questions": len(questions), "queries": nq}
    log(f"real: {len(snippets)} snippets, {len(questions)} questions")

    inner = SentenceTransformerEmbedder()
    _, load_s = timed(lambda: inner.embed(["warm up"]))
    import torch

    torch.set_num_threads(args.threads)
    sample = snippets[:: max(1, len(snippets) // 512)][:512]
    _, secs = timed(lambda: inner.embed(sample, batch_size=64))
    row(
        scale,
        "embed MiniLM (uncached sample)",
        n=len(sample),
        build_s=round(secs, 2),
        build_per_s=round(len(sample) / secs, 1),
        model_load_s=round(load_s, 2),
    )
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    (args.cache_dir / ".gitignore").write_text("*\n")  # never commit cached vectors
    cached = CachedEmbedder(inner, args.cache_dir / "embed")
    reset_peak()
    vectors, secs = timed(lambda: cached.embed(snippets, batch_size=64, show_progress=False))
    row(
        scale,
        "embed corpus (via cache)",
        n=len(snippets),
        build_s=round(secs, 2),
        build_per_s=round(cached.misses / secs, 1) if cached.misses else None,
        computed=cached.misses,
        from_cache=cached.hits,
        peak_gb=peak_gb(2),
    )
    qvecs = cached.embed(questions)
    qlat = latencies(lambda i: inner.embed_query(questions[i]), nq)  # uncached
    row(scale, "query embedding (MiniLM, 1 query)", **qlat)
    out["query_embed_p50_ms"] = qlat["p50_ms"]

    reset_peak()
    bm25, secs = timed(lambda: BM25Index.build(ids, snippets))
    lat = latencies(lambda i: bm25.search([questions[i]], DEPTH), nq)
    row(
        scale,
        "bm25 build+search",
        n=len(ids),
        build_s=round(secs, 2),
        build_per_s=round(len(ids) / secs),
        **lat,
        peak_gb=peak_gb(2),
    )
    for threads in (1, args.threads):
        _, secs = timed(lambda t=threads: bm25.search(questions, FINAL_K, n_threads=t))
        row(
            scale,
            f"bm25 batch n_threads={threads}",
            n=len(questions),
            qps=round(len(questions) / secs),
        )

    kinds = bench_dense_kinds(
        scale, ids, vectors, qvecs, args.kinds, bm25, questions, nq, keep=True
    )

    def gold_recall(rankings: list[list[Hit]]) -> float:
        vals = [
            len({h.id for h in r[:FINAL_K]} & {id_of[t] for t in g if t in id_of}) / len(g)
            for r, g in zip(rankings, gold, strict=True)
        ]
        return round(float(np.mean(vals)), 4)

    flat = kinds.get("flat") or DenseIndex.build(ids, vectors, kind="flat")
    lex = bm25.search(questions, DEPTH)
    sem = flat.search(qvecs, DEPTH)
    hyb = [reciprocal_rank_fusion([a, b], limit=FINAL_K) for a, b in zip(lex, sem, strict=True)]
    out["real"]["gold_snippet_recall@10"] = {
        "bm25": gold_recall(lex),
        "dense_flat": gold_recall(sem),
        "hybrid_rrf": gold_recall(hyb),
    }
    log(f"gold snippet recall@10: {out['real']['gold_snippet_recall@10']}")


def synthetic_texts(n: int, length: int, seed: int) -> list[str]:
    snippets, _, _ = load_bioasq()
    counts = collections.Counter(w for t in snippets for w in re.findall(r"\w+", t.lower()))
    words = np.asarray([w for w, _ in counts.most_common()], dtype=object)
    p = 1.0 / np.arange(1, len(words) + 1)
    p /= p.sum()
    rng = np.random.default_rng(seed)
    texts: list[str] = []
    for start in range(0, n, 100_000):
        m = min(100_000, n - start)
        texts.extend(" ".join(r) for r in words[rng.choice(len(words), size=(m, length), p=p)])
    return texts


def random_unit(n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = np.empty((n, dim), dtype=np.float32)
    for s in range(0, n, 100_000):
        chunk = rng.standard_normal((min(100_000, n - s), dim), dtype=np.float32)
        x[s : s + len(chunk)] = chunk / np.linalg.norm(chunk, axis=1, keepdims=True)
    return x


def synthetic_part(args: argparse.Namespace, out: dict[str, Any]) -> None:
    n = args.n_synthetic
    scale = f"synthetic {n // 1000}k" if n < 1_000_000 else f"synthetic {n / 1e6:g}M"
    _, questions, _ = load_bioasq()
    nq = min(args.queries, len(questions))
    texts, secs = timed(lambda: synthetic_texts(n, 40, seed=1))
    log(f"synthetic texts: {secs:.1f}s")
    ids = [f"c{i}" for i in range(n)]
    reset_peak()
    t = time.perf_counter()
    bm25 = BM25Index.build(ids, texts)
    secs = time.perf_counter() - t
    del texts
    lat = latencies(lambda i: bm25.search([questions[i]], DEPTH), nq)
    row(
        scale,
        "bm25 build+search",
        n=n,
        build_s=round(secs, 2),
        build_per_s=round(n / secs),
        **lat,
        peak_gb=peak_gb(2),
    )
    vectors, secs = timed(lambda: random_unit(n, 384, seed=2))
    qvecs = random_unit(len(questions), 384, seed=3)
    log(f"random vectors: {secs:.1f}s, rss {rss_gb(2)} GB")
    for m in args.flat_sizes:
        if m >= n:
            continue
        sub = DenseIndex.build(ids[:m], vectors[:m], kind="flat")
        row(
            f"synthetic {m // 1000}k",
            "dense flat search",
            n=m,
            **latencies(lambda i, sub=sub: sub.search(qvecs[i], DEPTH), nq),
        )
        del sub
    bench_dense_kinds(scale, ids, vectors, qvecs, args.kinds, bm25, questions, nq)
    out["synthetic"] = {"n": n, "queries": nq}


def table(rows: list[dict[str, Any]]) -> str:
    cols = [
        "scale",
        "stage",
        "n",
        "build_s",
        "build_per_s",
        "p50_ms",
        "p95_ms",
        "recall10_vs_flat",
        "peak_gb",
        "params",
    ]
    head = [
        "scale",
        "stage",
        "n",
        "build s",
        "build /s",
        "p50 ms",
        "p95 ms",
        "R@10 vs flat",
        "peak GB",
        "notes",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        notes = r.get("params") or ", ".join(
            f"{k}={r[k]}" for k in ("qps", "computed", "from_cache", "model_load_s") if k in r
        )
        cells = [("" if r.get(c) is None else str(r.get(c))) for c in cols[:-1]] + [notes]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--queries", type=int, default=200, help="queries timed per stage")
    ap.add_argument("--n-synthetic", type=int, default=1_000_000)
    ap.add_argument("--kinds", default="flat,hnsw,ivf", help="dense index kinds to compare")
    ap.add_argument(
        "--flat-sizes",
        default="100000,200000,500000",
        help="extra synthetic sizes at which exact search is timed",
    )
    ap.add_argument("--max-snippets", type=int, default=0, help="cap the real corpus (0: all)")
    ap.add_argument("--skip-real", action="store_true")
    ap.add_argument("--skip-synthetic", action="store_true")
    ap.add_argument("--cache-dir", type=Path, default=ROOT / ".cache")
    ap.add_argument("--json", action="store_true", help="print the JSON result to stdout")
    ap.add_argument("--out", type=Path, help="write the JSON result here")
    args = ap.parse_args()
    args.kinds = [k for k in args.kinds.split(",") if k]
    args.flat_sizes = [int(x) for x in args.flat_sizes.split(",") if x]
    import faiss

    faiss.omp_set_num_threads(args.threads)
    out: dict[str, Any] = {
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "machine": {
            "cpus": os.cpu_count(),
            "threads": args.threads,
            "python": platform.python_version(),
            "faiss": faiss.__version__,
        },
        "depth": DEPTH,
        "final_k": FINAL_K,
    }
    t0 = time.perf_counter()
    if not args.skip_real:
        real_part(args, out)
    if not args.skip_synthetic:
        synthetic_part(args, out)
    out["total_s"] = round(time.perf_counter() - t0, 1)
    out["rows"] = ROWS
    text = table(ROWS)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        print(text)
        print(f"\ntotal {out['total_s']} s; query embedding p50 {out.get('query_embed_p50_ms')} ms")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
