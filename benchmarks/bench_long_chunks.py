"""Chunks longer than the embedder reads: truncated (the model's own cut) against pooled windows.

all-MiniLM-L6-v2 reads 256 word pieces; biorag chunks raw text at up to 1,000 tokens. This
builds each corpus twice, with ``embed.long_texts = "truncate"`` and ``"pool"`` (everything
else equal), counts the chunks over the window, and scores document-level dense and hybrid
retrieval on the test questions (R@1, R@10, MRR@10 with ir_measures; paired bootstrap interval
of the MRR@10 difference):

  pubmedqa-sections  the library's PubMedQA index (one chunk per context section)
  pubmedqa-whole     each PubMedQA abstract as one raw-text document (its sections joined),
                     chunked by the defaults (1,000 tokens, 200 overlap); test = 500 PMIDs
  bioasq-snippets    the pooled BioASQ 7b-11b gold snippets (one chunk per snippet)
  bioasq-whole       each PMID's distinct gold snippets joined into one raw-text document;
                     test = the 11b questions (relevant = their documents in the corpus)

    python benchmarks/bench_long_chunks.py            # needs ../shared/data; ~60 min on 2 cores

A third variant, ``aligned``, chunks at the window instead (``chunking.chunk_tokens = 250``,
overlap 50) and embeds as the model does.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _bench import pin_threads

THREADS = pin_threads()

import json  # noqa: E402
import time  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_retrieval_quality import (  # noqa: E402
    PUBMEDQA,
    _bioasq_files,
    _pmid,
    bioasq_queries,
    pubmedqa_queries,
)

CACHE = REPO / "benchmarks" / ".cache" / "long_chunks"
OUT = REPO / "benchmarks" / "results" / "long_chunks.json"
MEASURES = ("R@1", "R@10", "RR@10")


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def corpus(name: str) -> Any:
    """The documents of one corpus, as a LoadReport."""
    from biorag.corpus.loaders import load_corpora, load_corpus
    from biorag.corpus.models import Document, LoadReport

    if name == "pubmedqa-sections":
        return load_corpus(PUBMEDQA, "pubmedqa")
    if name == "bioasq-snippets":
        return load_corpora(_bioasq_files((7, 8, 9, 10, 11)), "bioasq")
    if name == "pubmedqa-whole":
        data = json.loads(PUBMEDQA.read_text(encoding="utf-8"))
        docs = [Document.create(source_id=p, text="\n".join(r["CONTEXTS"]), source="pubmedqa")
                for p, r in data.items()]  # fmt: skip
        return LoadReport(documents=docs)
    snippets: dict[str, dict[str, None]] = {}
    for f in _bioasq_files((7, 8, 9, 10, 11)):
        for q in json.loads(f.read_text(encoding="utf-8"))["questions"]:
            for sn in q.get("snippets", []):
                snippets.setdefault(_pmid(sn["document"]), {})[sn["text"].strip()] = None
    docs = [Document.create(source_id=p, text="\n".join(s), source="bioasq")
            for p, s in sorted(snippets.items())]  # fmt: skip
    return LoadReport(documents=docs)


def build(name: str, mode: str) -> tuple[Path, Any, dict[str, Any]]:
    """The index of ``name`` for one variant: ``truncate`` and ``pool`` (embed.long_texts, the
    default chunking), ``aligned`` (chunks of at most 250 word pieces, the window, overlap 50)."""
    from biorag.config import ChunkingSettings, EmbedSettings
    from biorag.embed.factory import build_embedder
    from biorag.retrieve.index import IndexDir, index_stats

    long_texts = "pool" if mode == "pool" else "truncate"
    embedder = build_embedder(EmbedSettings(long_texts=long_texts), CACHE / "embed")
    chunking = ChunkingSettings(chunk_tokens=250, overlap_tokens=50) if mode == "aligned" else None
    path = CACHE / f"{name}_{mode}"
    info: dict[str, Any] = {}
    if not ((path / "manifest.json").is_file() and index_stats(path)["complete"]):
        t = time.perf_counter()
        with IndexDir(path, embedder, chunking, name=name) as idx:
            idx.add(corpus(name))
        info["build_s"] = round(time.perf_counter() - t, 1)
        log(f"built {path} in {info['build_s']} s")
    return path, embedder, info


def over_window(path: Path) -> dict[str, int]:
    from biorag.corpus.store import CorpusStore
    from biorag.embed.st_embedder import SentenceTransformerEmbedder
    from biorag.embed.windows import token_spans, window_tokens

    model = SentenceTransformerEmbedder()._load()
    store = CorpusStore(path / "corpus.sqlite")
    try:
        _, texts = store.all_chunk_texts()
    finally:
        store.close()
    lengths = [len(s) for s in token_spans(model.tokenizer, texts)]
    width = window_tokens(model)
    return {"chunks": len(texts), "over_window": sum(n > width for n in lengths),
            "window": width, "max_word_pieces": max(lengths)}  # fmt: skip


def scores(path: Path, embedder: Any, qset: Any, retriever: str) -> dict[str, Any]:
    from biorag.retrieve.search import Searcher
    from biorag.retrieve.trec import evaluate_run

    searcher = Searcher(path, embedder)
    try:
        hits = searcher.search(qset.texts, k=10, retriever=retriever, level="doc")
    finally:
        searcher.close()
    run = {q: [(p.source_id, p.score) for p in h] for q, h in zip(qset.qids, hits, strict=True)}
    per_query = [evaluate_run({q: run[q]}, {q: qset.qrels[q]}, ["RR@10"])["RR@10"]
                 for q in qset.qids]  # fmt: skip
    return {"means": evaluate_run(run, qset.qrels, MEASURES), "rr": per_query}


def paired_ci(a: list[float], b: list[float], n: int = 2000) -> list[float]:
    rng = np.random.default_rng(0)
    d = np.asarray(b) - np.asarray(a)
    means = [float(d[rng.integers(0, len(d), len(d))].mean()) for _ in range(n)]
    return [round(float(np.percentile(means, 2.5)), 4), round(float(np.percentile(means, 97.5)), 4)]


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpora", default="pubmedqa-sections,pubmedqa-whole,bioasq-snippets,"
                    "bioasq-whole")  # fmt: skip
    ap.add_argument("--variants", default="truncate,pool,aligned")
    ap.add_argument("--threads", default=THREADS)
    a = ap.parse_args()
    results: dict[str, Any] = json.loads(OUT.read_text()) if OUT.is_file() else {}
    results["threads"] = THREADS
    pubmed = pubmedqa_queries()["test"]
    variants = a.variants.split(",")
    for name in a.corpora.split(","):
        row: dict[str, Any] = {}
        paths = {mode: build(name, mode) for mode in variants}
        row["chunks"] = {m: over_window(p) for m, (p, _, _) in paths.items() if m != "pool"}
        if name.startswith("pubmedqa"):
            qset = pubmed
        else:
            from biorag.corpus.store import CorpusStore

            store = CorpusStore(paths[variants[0]][0] / "corpus.sqlite")
            try:
                pmids = {d.source_id for d in store.iter_documents()}
            finally:
                store.close()
            qset = bioasq_queries(pmids, restrict=True)["test"]
        row["queries"] = len(qset.qids)
        for retriever in ("dense", "hybrid"):
            got = {m: scores(p, e, qset, retriever) for m, (p, e, _) in paths.items()}
            row[retriever] = {m: {k: round(v, 4) for k, v in g["means"].items()}
                              for m, g in got.items()}  # fmt: skip
            for m in variants[1:]:  # each variant against the first (truncate)
                ci = paired_ci(got[variants[0]]["rr"], got[m]["rr"])
                row[retriever][f"mrr_delta_ci_{m}"] = ci
        row["build_s"] = {m: info.get("build_s") for m, (_, _, info) in paths.items()}
        results[name] = row
        log(f"{name}: {json.dumps(row)}")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
