"""IP-RAR retrieval stage on BioASQ 11b without an LLM: recall of each list, level and granularity
(the shape of table 4 of the IP-RAR paper, section 2.6), and the aggregator's ranking vs plain
dense and hybrid retrieval.

Data: the BioASQ 11b test questions (327) over the cached pooled-snippet index
``benchmarks/.cache/index/bioasq`` (built by ``bench_retrieval_quality.py``, whose loaders are
reused); relevant documents = the PMIDs of the question's ``documents`` that are in the corpus.

No LLM: IP-RAR's no-LLM pre-retrieval is used (``IPRAR.prereason`` with ``llm=None``): keywords =
the question's content words and bigrams, no synonyms, virtual answer = question + options.
BioASQ questions have no options, so the virtual answer *is* the question text and the
virtual-answer lists equal the question lists; the paper's virtual-answer and synonym gains
cannot show here.

Only the retrieval stage runs: ``IPRAR.prereason`` and ``IPRAR.retrieve`` (six lists,
``question|virtual|keyword @ abstract|fulltext``, k=10 each; question/virtual by dense
similarity, keyword by BM25; ``keyword_levels`` is set to both levels, while the method's
default, as in the paper, keeps keyword matching at the full-text level only), then
``biorag.retrieve.aggregate.aggregate`` (weights 5, 3, 1) -- never the progressive-generation
stage. The "abstract level" is IP-RAR's document-level search
(``Searcher.search(level="doc")``: each document's best chunk); the "full-text level" is
chunk-level search. The pooled corpus has no abstract/full-text distinction: a document is the
concatenation of its gold snippets, so both levels search the same snippet chunks and differ
only in whether a document can fill several of the 10 slots.

Recall (document level) = share of a question's relevant documents found by a list or a union of
lists, averaged over questions (macro); the micro (pooled) share and the mean number of distinct
documents in each union are reported too, since a union's recall grows with its size.

Ranking: the top 10 distinct documents of the aggregated chunk ranking (first occurrence per
document), and of the aggregator switched off (``by_similarity``), vs ``Searcher.search(
level="doc", k=10)`` with BM25, dense and the library hybrid: R@10 and MAP@10 (BioASQ: the sum
of precisions at the relevant ranks in the top 10 divided by min(R, 10)), with a 95% paired-
bootstrap interval of each row's MAP@10 minus the hybrid's.

    python benchmarks/bench_iprar_recall.py --out benchmarks/results/iprar_recall.json
"""

from __future__ import annotations

import os
import sys

from _bench import pin_threads

pin_threads()

import argparse  # noqa: E402
import asyncio  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from types import SimpleNamespace  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

import bench_retrieval_quality as brq  # noqa: E402

K = 10
GRANS = ("question", "virtual", "keyword")
LEVELS = ("abstract", "fulltext")
PAPER_TABLE4 = {  # IP-RAR paper, table 4 (BioCDQA, LLM pre-retrieval, with synonyms), recall %
    "question": {"abstract": 36.80, "fulltext": 31.28, "multi-level": 40.04, "cumulative": 40.04},
    "virtual": {"abstract": 34.79, "fulltext": 27.63, "multi-level": 39.62, "cumulative": 44.06},
    "keyword": {"abstract": 4.10, "fulltext": 42.46, "multi-level": 42.46, "cumulative": 66.10},
}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def recall_stats(found: list[set[str]], rel: list[set[str]]) -> dict[str, float]:
    per = [len(f & r) / len(r) for f, r in zip(found, rel, strict=True)]
    hit = sum(len(f & r) for f, r in zip(found, rel, strict=True))
    return {
        "recall": float(np.mean(per)),
        "recall_micro": hit / sum(len(r) for r in rel),
        "mean_docs": float(np.mean([len(f) for f in found])),
    }


def rank_metrics(tops: list[list[str]], rel: list[set[str]]) -> tuple[dict, np.ndarray]:
    r10 = np.asarray([len(set(t[:K]) & r) / len(r) for t, r in zip(tops, rel, strict=True)])
    ap = np.asarray(
        [
            brq._bioasq_ap([(d, 0.0) for d in t], dict.fromkeys(r, 1))
            for t, r in zip(tops, rel, strict=True)
        ]
    )
    return {"R@10": float(r10.mean()), "MAP@10": float(ap.mean())}, ap


def run(limit: int | None, cache_dir: Path) -> dict[str, Any]:
    from biorag.corpus.store import CorpusStore
    from biorag.methods.base import Question
    from biorag.methods.iprar import IPRAR
    from biorag.retrieve.aggregate import DEFAULT_WEIGHTS, aggregate, by_similarity
    from biorag.retrieve.search import MultiSearcher, Searcher

    t0 = time.perf_counter()
    path = cache_dir / "index" / "bioasq"
    if not (path / "manifest.json").is_file():
        raise SystemExit(f"{path} missing: build it with benchmarks/bench_retrieval_quality.py")
    store = CorpusStore(path / "corpus.sqlite")
    try:
        docs = list(store.iter_documents())
        n_chunks = store.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    finally:
        store.close()
    pmid_of = {d.id: d.source_id for d in docs}
    qs = brq.bioasq_queries(set(pmid_of.values()), restrict=True)["test"]
    qids, texts = qs.qids[:limit], qs.texts[:limit]
    rel = [set(qs.qrels[q]) for q in qids]
    log(f"bioasq: {len(docs)} docs, {n_chunks} chunks; {len(qids)} of {len(qs.qids)} questions")

    embedder = brq.make_embedder(cache_dir)
    searcher = Searcher(path, embedder)
    rt = SimpleNamespace(llm=None, embedder=embedder, searcher=MultiSearcher([searcher]))
    # Keyword lists at both levels (the method's default is the full-text level only, as in the
    # paper): this benchmark measures every granularity x level cell of table 4.
    method = IPRAR(rt, keyword_levels=list(LEVELS))  # type: ignore[arg-type]
    assert method.options["k"] == K and list(method.options["weights"]) == list(DEFAULT_WEIGHTS)

    found: dict[str, list[set[str]]] = {f"{g}@{lv}": [] for g in GRANS for lv in LEVELS}
    agg_top: list[list[str]] = []
    sim_top: list[list[str]] = []
    same_va = 0
    n_keywords: list[int] = []

    async def one(text: str) -> None:
        nonlocal same_va
        pre = await method.prereason(Question(text=text))
        same_va += pre["virtual_answer"] == text
        n_keywords.append(len(pre["keywords"]))
        lists, _ = await method.retrieve(Question(text=text), pre)
        for name, rows in lists.items():
            found[name].append({pmid_of[r["doc_id"]] for r in rows})
        tuples = {
            n: [(r["chunk_id"], r["doc_id"], r["similarity"]) for r in rows]
            for n, rows in lists.items()
        }
        agg = aggregate(tuples, method.options["weights"])
        agg_top.append(list(dict.fromkeys(pmid_of[c.doc_id] for c in agg))[:K])
        sim_top.append(list(dict.fromkeys(pmid_of[c.doc_id] for c in by_similarity(tuples)))[:K])

    t_ret = time.perf_counter()
    for i, text in enumerate(texts, start=1):
        asyncio.run(one(text))
        if i % 50 == 0:
            log(f"  {i}/{len(texts)} questions")
    t_ret = time.perf_counter() - t_ret

    # table 4 shape
    def union(names: list[str]) -> list[set[str]]:
        return [set().union(*(found[n][i] for n in names)) for i in range(len(qids))]

    table4: dict[str, dict[str, Any]] = {}
    cumulative: list[str] = []
    for g in GRANS:
        row = {lv: recall_stats(found[f"{g}@{lv}"], rel) for lv in LEVELS}
        row["multi-level"] = recall_stats(union([f"{g}@{lv}" for lv in LEVELS]), rel)
        cumulative += [f"{g}@{lv}" for lv in LEVELS]
        row["cumulative"] = recall_stats(union(cumulative), rel)
        table4[g] = row
    per_level = {lv: recall_stats(union([f"{g}@{lv}" for g in GRANS]), rel) for lv in LEVELS}
    all_lists = recall_stats(union(list(found)), rel)
    subset = {
        g: sum(found[f"{g}@fulltext"][i] <= found[f"{g}@abstract"][i] for i in range(len(qids)))
        for g in GRANS
    }
    identical = sum(
        found[f"question@{lv}"][i] == found[f"virtual@{lv}"][i]
        for lv in LEVELS
        for i in range(len(qids))
    )

    # ranking vs the library
    t_lib = time.perf_counter()
    ranking: dict[str, dict[str, Any]] = {}
    aps: dict[str, np.ndarray] = {}
    for r in ("bm25", "dense", "hybrid"):
        res = searcher.search(list(texts), k=K, retriever=r, level="doc")
        ranking[f"library {r} (Searcher.search level=doc)"], aps[r] = rank_metrics(
            [[p.source_id for p in ps] for ps in res], rel
        )
    t_lib = time.perf_counter() - t_lib
    ranking["IP-RAR aggregator (5,3,1), first occurrence"], aps["agg"] = rank_metrics(agg_top, rel)
    ranking["IP-RAR lists, aggregator off (by_similarity)"], aps["sim"] = rank_metrics(sim_top, rel)
    for name, key in zip(ranking, ("bm25", "dense", "hybrid", "agg", "sim"), strict=True):
        d = aps[key] - aps["hybrid"]
        lo, hi = brq.paired_ci(aps[key], aps["hybrid"])
        ranking[name]["MAP@10_delta_vs_hybrid"] = float(d.mean())
        ranking[name]["delta_95ci"] = [lo, hi]
    searcher.close()

    return {
        "benchmark": "iprar_recall",
        "dataset": "BioASQ 11b test (documents PMIDs present in the pooled corpus)",
        "index": str(path),
        "documents": len(docs),
        "chunks": int(n_chunks),
        "questions": len(qids),
        "questions_total": len(qs.qids),
        "limit": limit,
        "embed_model": embedder.model_id,
        "k_per_list": K,
        "weights": list(method.options["weights"]),
        "llm": None,
        "prereasoning": "no LLM: keywords = content words + bigrams, no synonyms, "
        "virtual answer = question + options (BioASQ has no options)",
        "virtual_answer_equals_question": same_va,
        "virtual_lists_identical_to_question_lists": f"{identical}/{2 * len(qids)}",
        "mean_keywords": float(np.mean(n_keywords)),
        "fulltext_docs_subset_of_abstract_docs": subset,
        "levels": {
            "abstract": "document-level search over snippet chunks (each doc's best chunk)",
            "fulltext": "chunk-level search over the same snippet chunks",
        },
        "recall_lists": {n: recall_stats(f, rel) for n, f in found.items()},
        "table4": table4,
        "recall_level_union": per_level,
        "recall_all_lists": all_lists,
        "paper_table4_biocdqa_percent": PAPER_TABLE4,
        "ranking_top10": ranking,
        "seconds": {
            "iprar_retrieval": round(t_ret, 1),
            "library_rankings": round(t_lib, 1),
            "total": round(time.perf_counter() - t0, 1),
        },
    }


def _r(s: dict[str, float]) -> str:
    return f"{100 * s['recall']:.2f} ({s['mean_docs']:.1f})"


def markdown(res: dict[str, Any]) -> str:
    t4 = res["table4"]
    lines = [
        f"### IP-RAR retrieval recall, BioASQ 11b ({res['questions']} questions; "
        f"{res['documents']} docs / {res['chunks']} snippet chunks; no LLM, k={res['k_per_list']} "
        "per list)",
        "",
        f"virtual answer = question text for {res['virtual_answer_equals_question']}/"
        f"{res['questions']} questions; virtual lists identical to question lists: "
        f"{res['virtual_lists_identical_to_question_lists']}. "
        "'abstract' = document-level search over snippets; 'full-text' = chunk-level search.",
        "",
        "Recall % (macro over questions; mean distinct docs in parentheses); paper = table 4 "
        "(BioCDQA, LLM keywords + synonyms):",
        "",
        "| granularity; strategy composition | abstract | full-text | multi-level | "
        "cumulative | paper abs / full / multi / cum |",
        "|---|---:|---:|---:|---:|---|",
    ]
    labels = {
        "question": "question-based (dense); only question",
        "virtual": "virtual answer-based (dense); + virtual answer",
        "keyword": "keyword-based (BM25); + keyword",
    }
    for g in GRANS:
        row, p = t4[g], PAPER_TABLE4[g]
        paper = " / ".join(
            f"{p[c]:.2f}" for c in ("abstract", "fulltext", "multi-level", "cumulative")
        )
        lines.append(
            f"| {labels[g]} | {_r(row['abstract'])} | {_r(row['fulltext'])} | "
            f"{_r(row['multi-level'])} | {_r(row['cumulative'])} | {paper} |"
        )
    lv = res["recall_level_union"]
    lines += [
        f"| union of granularities | {_r(lv['abstract'])} | {_r(lv['fulltext'])} | "
        f"{_r(res['recall_all_lists'])} | | |",
        "",
        "full-text docs a subset of abstract docs (questions): "
        + ", ".join(
            f"{g} {n}/{res['questions']}"
            for g, n in res["fulltext_docs_subset_of_abstract_docs"].items()
        )
        + f"; micro recall of all lists: {100 * res['recall_all_lists']['recall_micro']:.2f}%; "
        f"mean keywords per question {res['mean_keywords']:.1f}",
        "",
        "Top-10 documents (R@10, BioASQ MAP@10; delta = MAP@10 minus hybrid's, 95% paired "
        "bootstrap):",
        "",
        "| ranking | R@10 | MAP@10 | delta MAP@10 [95% CI] |",
        "|---|---:|---:|---|",
    ]
    for name, m in res["ranking_top10"].items():
        lo, hi = m["delta_95ci"]
        lines.append(
            f"| {name} | {m['R@10']:.3f} | {m['MAP@10']:.3f} | "
            f"{m['MAP@10_delta_vs_hybrid']:+.3f} [{lo:+.3f}, {hi:+.3f}] |"
        )
    s = res["seconds"]
    lines += [
        "",
        f"time: IP-RAR retrieval {s['iprar_retrieval']} s, library rankings "
        f"{s['library_rankings']} s, total {s['total']} s",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    ap.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    ap.add_argument(
        "--cache-dir",
        type=Path,
        default=ROOT / ".cache",
        help="index directory and embedding cache (default benchmarks/.cache)",
    )
    args = ap.parse_args(argv)
    if not brq.BIOASQ_DIR.exists():
        ap.error(f"{brq.BIOASQ_DIR} not found (set BIORAG_SHARED_DATA to the shared data folder)")
    res = run(args.limit, args.cache_dir)
    res["machine"] = {
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }
    if args.out:
        from biorag.util.files import write_json_atomic

        write_json_atomic(args.out, res)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print(markdown(res))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
