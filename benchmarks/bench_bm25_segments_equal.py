"""Segment BM25 (term frequencies scored at query time) against bm25s on the same real chunks.

Builds one ``TermSegment`` from an index's chunks and compares its top-10 for every BioASQ
question body with the ``BM25Index`` (bm25s) built from the same chunks with the same k1 and b:
how many queries get the same scores (within 1e-4) and the same ids in the same order.

    python benchmarks/bench_bm25_segments_equal.py --index benchmarks/.cache/index/bioasq \\
        --out benchmarks/results/bm25_segments_equal.json

(the index is the one ``bench_retrieval_quality.py`` builds from the BioASQ snippets)
"""

from __future__ import annotations

import argparse
import glob
import json
import time
from pathlib import Path
from typing import Any

from biorag.config import RetrievalSettings
from biorag.corpus.store import CorpusStore
from biorag.retrieve.bm25 import BM25Index
from biorag.retrieve.bm25_terms import TermSegment
from biorag.retrieve.segments import Segment, SegmentedBM25
from biorag.util.files import write_json_atomic

BIOASQ_GLOB = "/work/shared/data/mirage/rawdata/bioasq/Task*BGoldenEnriched/*.json"


class _Ids:
    """What a Segment needs of its dense part here: the row ids."""

    def __init__(self, ids: list[str]) -> None:
        self.ids = ids


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--index", type=Path, required=True)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    store = CorpusStore(args.index / "corpus.sqlite")
    ids, texts = store.all_chunk_texts()
    store.close()
    st = RetrievalSettings()
    t = time.perf_counter()
    one = BM25Index.build(ids, texts, k1=st.bm25_k1, b=st.bm25_b)
    bm25s_s = time.perf_counter() - t
    t = time.perf_counter()
    terms = TermSegment.build(texts)
    terms_s = time.perf_counter() - t
    seg = SegmentedBM25([Segment("all", terms, _Ids(ids), None)], st.bm25_k1, st.bm25_b)  # type: ignore[arg-type]
    questions: list[str] = []
    for path in sorted(glob.glob(BIOASQ_GLOB)):
        with open(path, encoding="utf-8") as f:
            questions += [q["body"] for q in json.load(f)["questions"] if q.get("body")]
    same_ids = same_scores = 0
    for q in questions:
        a, b = seg.search([q], 10)[0], one.search([q], 10)[0]
        same_ids += [h.id for h in a] == [h.id for h in b]
        same_scores += len(a) == len(b) and all(
            abs(x.score - y.score) <= 1e-4 * max(1.0, y.score) for x, y in zip(a, b, strict=True)
        )
    out: dict[str, Any] = {
        "index": str(args.index),
        "chunks": len(ids),
        "questions": len(questions),
        "k1": st.bm25_k1,
        "b": st.bm25_b,
        "same_top10_scores": same_scores,
        "same_top10_ids_in_order": same_ids,
        "build_s": {"bm25s": round(bm25s_s, 2), "term_segment": round(terms_s, 2)},
    }
    print(json.dumps(out, indent=2))
    write_json_atomic(args.out, out)


if __name__ == "__main__":
    main()
