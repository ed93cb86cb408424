"""The retrieval settings of issue #32, one at a time and combined, through the library's own code.

Each ``[retrieval]`` setting (``abbreviations``, ``prf``, ``doc_score``, ``second_encoder``,
``dense_weight`` / ``second_weight`` as fusion weights learnt on training questions) is measured
against today's default on the corpora and qrels of ``bench_retrieval_quality.py``:

  BioASQ   pooled 7b-11b gold snippets; tuned on 7b-10b (1,983 questions, BioASQ MAP@10),
           reported on 11b (327 questions): R@10 and BioASQ's MAP@10 at document level.
  PubMedQA the 1,000 PQA-L abstracts; tuned on the 500 non-test questions (MRR@10), reported on
           the 500 test questions: R@1 (the question's own PMID).

The candidate lists (BM25 with and without expansion and RM3, each encoder with and without
expansion; 100 chunks each, as ``Searcher.search(level="doc", k=10)`` asks) come from the
searcher's own objects, and are fused by ``biorag.retrieve.ranking.fuse`` and turned into
documents the way the searcher does (first occurrence, or ``doc_ranking``), so any weights can
be tried without searching again. The rows that are reported are then searched again end to
end through ``Searcher.search`` with those settings, and the two are checked to agree.

Tuning never sees 11b or the PubMedQA test questions; one setting is chosen for both corpora (the
best mean of their dev objectives). Every test figure has a 95% paired-bootstrap interval
against the default.

    python benchmarks/bench_retrieval_ablation.py --out benchmarks/results/retrieval_ablation.json
"""

from __future__ import annotations

from _bench import pin_threads, provenance

pin_threads()

import argparse  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
from dataclasses import asdict, dataclass, replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

from bench_retrieval_quality import (  # noqa: E402
    BIOASQ_DIR,
    PUBMEDQA,
    ROOT,
    QuerySet,
    bioasq_queries,
    ensure_index,
    log,
    make_embedder,
    paired_ci,
    pubmedqa_queries,
)
from biorag.config import EmbedSettings, RetrievalSettings  # noqa: E402
from biorag.retrieve.hits import Hit  # noqa: E402
from biorag.retrieve.prf import rm3_search  # noqa: E402
from biorag.retrieve.ranking import doc_ranking, fuse, hybrid_weights  # noqa: E402
from biorag.retrieve.search import Searcher  # noqa: E402

K, DEPTH = 10, 100
SECOND = "all-mpnet-base-v2"
OBJECTIVE = {"bioasq": "MAP@10", "pubmedqa": "MRR@10"}
REPORT = {"bioasq": ("R@10", "MAP@10"), "pubmedqa": ("R@1", "MRR@10")}


@dataclass(frozen=True)
class Setting:
    """The ``[retrieval]`` settings a row changes (everything else at the defaults)."""

    fusion: str = "score"
    dense_weight: float = 0.5
    abbreviations: str = "off"
    abbreviations_for: str = "bm25"
    prf: str = "none"
    doc_score: str = "max"
    second_encoder: str | None = None
    second_weight: float = 0.5

    def settings(self) -> RetrievalSettings:
        return RetrievalSettings(**asdict(self))


def per_query(ranked: list[list[str]], qrels: list[set[str]]) -> dict[str, np.ndarray]:
    out = {m: np.zeros(len(qrels)) for m in ("R@1", "R@10", "MRR@10", "MAP@10")}
    for i, (docs, rel) in enumerate(zip(ranked, qrels, strict=True)):
        hits = [r for r, d in enumerate(docs[:K], start=1) if d in rel]
        if not hits:
            continue
        out["R@1"][i] = float(hits[0] == 1) / len(rel)
        out["R@10"][i] = len(hits) / len(rel)
        out["MRR@10"][i] = 1.0 / hits[0]
        out["MAP@10"][i] = sum((j + 1) / r for j, r in enumerate(hits)) / min(len(rel), K)
    return out


class Lists:
    """Every candidate list a setting can use, for one query set over one index."""

    def __init__(self, path: Path, embedder: Any, second: Any, qs: QuerySet):
        st = RetrievalSettings(abbreviations="corpus", second_encoder=SECOND if second else None)
        self.searcher = s = Searcher(path, embedder, st, second_embedder=second)
        texts = list(qs.texts)
        expanded = [s.expand.expand(q) for q in texts]
        self.n_expanded = sum(a != b for a, b in zip(texts, expanded, strict=True))
        bm = s.ranking.bm25
        rm3 = dict(texts_of=s._texts_of, docs=st.prf_docs, terms=st.prf_terms, orig=st.prf_weight)
        sec = s.ranking.second
        t = time.perf_counter()
        self.lists: dict[str, list[list[Hit]]] = {
            "bm25": bm.search(texts, DEPTH),
            "bm25+abbr": bm.search(expanded, DEPTH),
            "bm25+rm3": rm3_search(bm, texts, DEPTH, **rm3),
            "bm25+abbr+rm3": rm3_search(bm, expanded, DEPTH, **rm3),
            "dense": s.dense.search(embedder.embed(texts), DEPTH),
            "dense+abbr": s.dense.search(embedder.embed(expanded), DEPTH),
        }
        if sec is not None:
            self.lists["second"] = sec.search(texts, DEPTH)
            self.lists["second+abbr"] = sec.search(expanded, DEPTH)
        self.seconds = round(time.perf_counter() - t, 1)
        with s._reading_store():
            ids = sorted({h.id for ls in self.lists.values() for r in ls for h in r})
            chunks = s.store.get_chunks(ids)
            docs = s.store.get_documents(sorted({c.doc_id for c in chunks.values()}))
        self.chunk_doc = {cid: c.doc_id for cid, c in chunks.items()}
        self.pmid = {cid: docs[c.doc_id].source_id for cid, c in chunks.items()}
        self.qrels = [set(qs.qrels[q]) for q in qs.qids]

    def ranked(self, cfg: Setting) -> list[list[str]]:
        st = cfg.settings()
        ab = "+abbr" if cfg.abbreviations != "off" else ""
        dab = ab if cfg.abbreviations_for == "all" else ""
        bm = self.lists["bm25" + ab + ("+rm3" if cfg.prf == "rm3" else "")]
        lists = [bm, self.lists["dense" + dab]]
        if cfg.second_encoder:
            lists.append(self.lists["second" + dab])
        w = hybrid_weights(st, bool(cfg.second_encoder))
        out = []
        for row in zip(*lists, strict=True):
            fused = fuse(list(row), w, st, DEPTH)
            fused = doc_ranking(fused, self.chunk_doc, cfg.doc_score)
            seen: list[str] = []
            for h in fused:
                p = self.pmid[h.id]
                if p not in seen:
                    seen.append(p)
                if len(seen) == K:
                    break
            out.append(seen)
        return out

    def has(self, cfg: Setting) -> bool:
        """Whether this set's lists cover ``cfg`` (the second encoder may be left out)."""
        return not cfg.second_encoder or "second" in self.lists

    def score(self, cfg: Setting) -> dict[str, np.ndarray]:
        return per_query(self.ranked(cfg), self.qrels)

    def end_to_end(self, cfg: Setting, qs: QuerySet, embedder: Any, second: Any) -> list[list[str]]:
        s = Searcher(self.searcher.path, embedder, cfg.settings(), second_embedder=second)
        try:
            res = s.search(list(qs.texts), k=K, level="doc")
        finally:
            s.close()
        return [[p.source_id for p in ps] for ps in res]


def candidates() -> tuple[list[Setting], list[Setting], list[Setting]]:
    """The one-at-a-time rows, and the combined grids with and without the second encoder."""
    d = Setting()
    one = [
        replace(d, fusion="rrf"),
        replace(d, abbreviations="corpus"),
        replace(d, abbreviations="corpus", abbreviations_for="all"),
        replace(d, prf="rm3"),
        replace(d, doc_score="sum"),
        replace(d, doc_score="top2"),
        *(replace(d, dense_weight=w) for w in (0.3, 0.4, 0.6, 0.7)),
        *(replace(d, second_encoder=SECOND, second_weight=w) for w in (0.3, 0.4, 0.5, 0.6, 0.7)),
    ]
    combos = list(
        itertools.product(
            (0.4, 0.5, 0.6),
            (("off", "bm25"), ("corpus", "bm25"), ("corpus", "all")),
            ("none", "rm3"),
        )
    )
    grid = [
        Setting(
            dense_weight=dw,
            abbreviations=ab,
            abbreviations_for=af,
            prf=prf,
            second_encoder=SECOND,
            second_weight=sw,
        )
        for (dw, (ab, af), prf), sw in itertools.product(combos, (0.3, 0.4, 0.5, 0.6))
    ]
    grid1 = [
        Setting(dense_weight=dw, abbreviations=ab, abbreviations_for=af, prf=prf)
        for dw, (ab, af), prf in combos
    ]
    return one, grid, grid1


def label(cfg: Setting) -> str:
    d = asdict(Setting())
    parts = [f"{k}={v}" for k, v in asdict(cfg).items() if v != d[k]]
    return ", ".join(parts) or "default (score fusion, MiniLM + BM25)"


def group(cfg: Setting) -> str:
    """The ablation a one-at-a-time row belongs to."""
    changed = {k for k, v in asdict(cfg).items() if v != asdict(Setting())[k]}
    for key, name in (
        ("second_encoder", "second encoder (all-mpnet-base-v2), weight learnt on dev"),
        ("abbreviations", "abbreviation expansion (Schwartz-Hearst, mined from the corpus)"),
        ("prf", "RM3 on BM25"),
        ("doc_score", "document score from chunk scores"),
        ("dense_weight", "fusion weight learnt on dev (dense vs BM25)"),
        ("fusion", "RRF (the first hybrid)"),
    ):
        if key in changed:
            return name
    return "default"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    ap.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    ap.add_argument("--cache-dir", type=Path, default=ROOT / ".cache")
    ap.add_argument(
        "--second-on",
        default="bioasq,pubmedqa",
        help="the corpora the second encoder is measured on (its chunk vectors are built once "
        "per corpus: about 45 min for BioASQ's 21k snippets on 2 cores)",
    )
    args = ap.parse_args(argv)
    for f in (PUBMEDQA, BIOASQ_DIR):
        if not f.exists():
            ap.error(f"{f} not found (set BIORAG_SHARED_DATA to the shared data folder)")
    from biorag.embed.factory import build_embedder

    t0 = time.perf_counter()
    embedder = make_embedder(args.cache_dir)
    second = build_embedder(EmbedSettings(model=SECOND), args.cache_dir / "embed")
    data: dict[str, dict[str, Lists]] = {}
    sets: dict[str, dict[str, QuerySet]] = {}
    for ds in ("bioasq", "pubmedqa"):
        path, _ = ensure_index(ds, args.cache_dir, embedder)
        if ds == "pubmedqa":
            qsets = pubmedqa_queries()
        else:
            s = Searcher(path, embedder)
            with s._reading_store():
                pmids = {d.source_id for d in s.store.iter_documents()}
            s.close()
            qsets = bioasq_queries(pmids, restrict=True)
        sets[ds] = qsets
        sec = second if ds in args.second_on.split(",") else None
        data[ds] = {split: Lists(path, embedder, sec, qsets[split]) for split in qsets}
        log(f"{ds}: lists for {[len(q.qids) for q in qsets.values()]} queries")
    one, grid, grid1 = candidates()
    cands = list({label(c): c for c in [Setting(), *one, *grid, *grid1]}.values())
    dev = {
        ds: {
            label(c): float(data[ds]["dev"].score(c)[OBJECTIVE[ds]].mean())
            for c in cands
            if data[ds]["dev"].has(c)
        }
        for ds in data
    }
    # the mean over the corpora a setting was measured on
    by_mean = {
        label(c): float(np.mean([dev[ds][label(c)] for ds in data if label(c) in dev[ds]]))
        for c in cands
        if any(label(c) in dev[ds] for ds in data)
    }
    one = [c for c in one if label(c) in by_mean]
    grid = [c for c in grid if label(c) in by_mean] or grid1
    best = max(grid, key=lambda c: by_mean[label(c)])
    best1 = max(grid1, key=lambda c: by_mean[label(c)])
    # one-at-a-time: within each group the best on the mean dev objective
    groups: dict[str, Setting] = {}
    for c in one:
        g = group(c)
        if g not in groups or by_mean[label(c)] > by_mean[label(groups[g])]:
            groups[g] = c
    rows = [
        ("default", Setting()),
        *groups.items(),
        ("combined without a second encoder, tuned on dev", best1),
        ("combined, tuned on dev", best),
    ]
    results: dict[str, Any] = {}
    for ds in data:
        test, qs = data[ds]["test"], sets[ds]["test"]
        base = test.score(Setting())
        out = []
        for name, cfg in rows:
            if not test.has(cfg):
                out.append({"row": name, "setting": label(cfg), "measured": False})
                continue
            m = test.score(cfg)
            e2e = test.end_to_end(cfg, qs, embedder, second)
            same = e2e == test.ranked(cfg)
            row: dict[str, Any] = {
                "row": name, "setting": label(cfg), "config": asdict(cfg),
                "dev_objective": round(dev[ds][label(cfg)], 4), "end_to_end_equal": same,
            }  # fmt: skip
            for metric in REPORT[ds]:
                lo, hi = paired_ci(m[metric], base[metric])
                row[metric] = round(float(m[metric].mean()), 4)
                row[f"{metric}_delta"] = round(float((m[metric] - base[metric]).mean()), 4)
                row[f"{metric}_ci"] = [round(lo, 4), round(hi, 4)]
            out.append(row)
            log(f"{ds} {name}: {row}")
        results[ds] = {
            "queries": {s: len(q.qids) for s, q in sets[ds].items()},
            "expanded_queries": {s: data[ds][s].n_expanded for s in sets[ds]},
            "abbreviations_mined": len(data[ds]["test"].searcher.expand.pairs),
            "second_encoder_measured": "second" in data[ds]["test"].lists,
            "list_seconds": {s: data[ds][s].seconds for s in sets[ds]},
            "rows": out,
        }
    res = {
        "benchmark": "retrieval_ablation",
        **provenance(),
        "dev_mean_objective": {k: round(float(v), 4) for k, v in by_mean.items()},
        "chosen": label(best),
        "chosen_without_second": label(best1),
        "results": results,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    if args.out:
        from biorag.util.files import write_json_atomic

        write_json_atomic(args.out, res)
    print(json.dumps(res, indent=2) if args.json else json.dumps(results, indent=1)[:4000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
