"""What each retrieval setting of the ablation costs per query at N chunks (default 1M) on this
machine, query embedding included: the library's ``LocalRanking.rank`` (the searcher's ranking
step) timed for the default and for each setting, side by side in one run.

The index is synthetic, as in ``bench_retrieval_speed.py``: N chunks of 40 words drawn Zipf-wise
from the BioASQ snippet vocabulary in one in-memory segment (BM25 postings + HNSW over random
unit vectors, which is how ``dense_index = "auto"`` indexes 1M chunks); the queries are BioASQ
question bodies, embedded by the real all-MiniLM-L6-v2 (and all-mpnet-base-v2 for the second
encoder, over its own random 768-d HNSW). The abbreviation pairs are the ones mined from the real
BioASQ snippets. Latency = p50/p95 of single queries after 10 warm-up ones.

    python benchmarks/bench_retrieval_ablation_speed.py --n 1000000 \\
        --out benchmarks/results/retrieval_ablation_speed.json
"""

from __future__ import annotations

import argparse

from _bench import pin_threads, provenance

pin_threads()

import time  # noqa: E402
from typing import Any  # noqa: E402

from bench_retrieval_speed import latencies, load_bioasq, random_unit, synthetic_texts  # noqa: E402
from biorag.config import EmbedSettings, RetrievalSettings  # noqa: E402
from biorag.embed.factory import build_embedder  # noqa: E402
from biorag.retrieve.abbreviations import Expander, mine  # noqa: E402
from biorag.retrieve.bm25_terms import TermSegment  # noqa: E402
from biorag.retrieve.dense import DenseIndex  # noqa: E402
from biorag.retrieve.ranking import LocalRanking  # noqa: E402
from biorag.retrieve.segments import Positions, Segment, SegmentedBM25, SegmentedDense  # noqa: E402

DEPTH = 100


def log(msg: str) -> None:
    import sys

    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


class SecondOver:
    """The second encoder's search: the real model for the query, an HNSW over N vectors."""

    def __init__(self, embedder: Any, dense: DenseIndex):
        self.embedder, self.dense = embedder, dense

    def search(self, queries: list[str], depth: int) -> Any:
        return self.dense.search(self.embedder.embed(queries), depth)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--no-second", action="store_true", help="leave the second encoder out")
    ap.add_argument("--out")
    args = ap.parse_args()
    snippets, questions, _ = load_bioasq()
    queries = questions[: args.queries + 10]
    t = time.perf_counter()
    texts = synthetic_texts(args.n, 40, seed=0)
    ids = [f"c{i}" for i in range(args.n)]
    terms = TermSegment.build(texts)
    log(f"BM25 postings of {args.n:,} chunks in {time.perf_counter() - t:.0f} s")
    t = time.perf_counter()
    dense = DenseIndex.build(ids, random_unit(args.n, 384, seed=1), "hnsw")
    log(f"HNSW 384-d in {time.perf_counter() - t:.0f} s")
    seg = Segment("s1", terms, dense, None)
    where = Positions([seg])
    st0 = RetrievalSettings()
    bm25 = SegmentedBM25([seg], st0.bm25_k1, st0.bm25_b, where)
    sdense = SegmentedDense([seg], 384, where)
    emb = build_embedder(EmbedSettings())
    by_id = dict(zip(ids, texts, strict=True))

    def texts_of(wanted: list[str]) -> dict[str, str]:
        return {i: by_id[i] for i in wanted}

    t = time.perf_counter()
    pairs = mine(snippets)
    expander = Expander(pairs)
    mine_s = time.perf_counter() - t
    second = None
    if not args.no_second:
        t = time.perf_counter()
        d2 = DenseIndex.build(ids, random_unit(args.n, 768, seed=2), "hnsw")
        log(f"HNSW 768-d in {time.perf_counter() - t:.0f} s")
        second = SecondOver(build_embedder(EmbedSettings(model="all-mpnet-base-v2")), d2)
    variants: dict[str, tuple[dict[str, Any], Any, Any]] = {
        "default": ({}, None, None),
        "abbreviations = corpus": ({"abbreviations": "corpus"}, expander, None),
        "prf = rm3": ({"prf": "rm3"}, None, None),
        "abbreviations + rm3": ({"abbreviations": "corpus", "prf": "rm3"}, expander, None),
    }
    if second is not None:
        variants["second_encoder = all-mpnet-base-v2"] = (
            {"second_encoder": "all-mpnet-base-v2"}, None, second,
        )  # fmt: skip
        variants["all of them"] = (
            {"abbreviations": "corpus", "prf": "rm3", "second_encoder": "all-mpnet-base-v2"},
            expander, second,
        )  # fmt: skip
    rows = []
    encoders = {"all-MiniLM-L6-v2": emb}
    encoders["all-mpnet-base-v2"] = (
        second.embedder if second else build_embedder(EmbedSettings(model="all-mpnet-base-v2"))
    )
    embedding = {
        name: latencies(lambda i, e=e: e.embed([queries[i]]), args.queries)
        for name, e in encoders.items()
    }
    log(f"query embedding alone: {embedding}")
    for name, (upd, exp, sec) in variants.items():
        st = st0.model_copy(update=upd)
        ranking = LocalRanking(bm25, sdense, lambda: emb, st, texts_of, exp, sec)
        lat = latencies(lambda i, r=ranking: r.rank([queries[i]], DEPTH, "hybrid"), args.queries)
        rows.append({"setting": name, **lat})
        log(f"{name}: {lat}")
    out = {
        "benchmark": "retrieval_ablation_speed",
        **provenance(),
        "n": args.n,
        "queries": args.queries,
        "abbreviation_pairs": len(pairs),
        "mine_s": round(mine_s, 1),
        "rows": rows,
        "query_embedding": embedding,
    }
    if args.out:
        from biorag.util.files import write_json_atomic

        write_json_atomic(args.out, out)
    import json

    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
