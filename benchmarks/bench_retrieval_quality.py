"""Document-level retrieval quality on the offline corpora, and what beats plain RRF without an LLM.

Corpora (closed, oracle-containing: every gold document is in them):
  pubmedqa  the 1,000 PubMedQA PQA-L abstracts (CONTEXTS only, never LONG_ANSWER; one chunk per
            context section, 3,358 chunks); queries = QUESTION; the relevant doc = its own PMID.
            test = the 500 PMIDs of test_ground_truth.json, dev = the other 500.
  bioasq    the pooled BioASQ 7b-11b gold snippets (21,231 exact-distinct snippets in 13,437
            PMIDs; the index holds 13,432 documents / 21,226 chunks, because five PMIDs whose
            snippets equal another PMID's after stripping collapse onto one content id);
            queries = ``body``; relevant docs = the PMIDs of the question's ``documents`` URLs
            that are in the index (the primary qrels, used for tuning). Also reported: the
            same without that restriction, and the PMIDs of the question's gold *snippets*
            (the qrels that reproduce the issue's dense and hybrid reference numbers).
            test = 11b (327 questions), dev = 7b-10b (1,983).

Metrics (document level): R@1, R@10, MRR@10 (ir_measures RR@10), AP@10 as ir_measures computes
it (sum of precisions at the relevant ranks in the top 10 divided by R, the number of relevant
documents) and MAP@10 as BioASQ computes it (the same sum divided by min(R, 10)); for PubMedQA
(R = 1) they coincide. Means are over the queries that have at least one relevant document.
``delta`` is a row's test objective minus the library hybrid's, with a 95% paired-bootstrap
interval.

Rows:
  * library: ``Searcher.search(level="doc")`` (BM25 / dense / hybrid = RRF k=60 of top-100
    chunk lists, first occurrence of each document), written as TREC runs and scored with
    ``biorag.retrieve.trec.evaluate_run`` (ir_measures; scores replaced by rank, because
    trec_eval re-sorts tied RRF scores by doc id).
  * attempts: computed in-process from the same index (chunk texts, the index's FAISS index)
    by a vectorized re-implementation that reproduces the library rows exactly at the library
    settings (checked and printed), so that the attempts run side by side:
    (a) weighted RRF (dense vs BM25 weight) and rrf k, convex score fusion; (b) chunk ->
    document aggregation (max = first occurrence, sum, top-2 sum, log-sum-exp, of chunk scores
    or of RRF contributions; whole-document BM25; centroid vectors); (c) pseudo-relevance
    feedback (RM3 for BM25, Rocchio for the dense query vector); (d) fields (PubMedQA MeSH
    terms as an extra BM25 list -- curated metadata, not text; BioASQ has no titles, but its
    title snippets (``beginSection`` = title) can be up-weighted); (e) BM25 k1/b, depth of the
    candidate lists before fusion; then all of them by coordinate ascent, and one setting for
    every corpus (the candidate with the best mean dev objective), also run through the
    library's own functions (``BM25Index.build(k1, b)``, ``fusion.convex_score_fusion``).
  Every tunable is chosen on the development queries only (objective MRR@10 for PubMedQA,
  BioASQ MAP@10 for BioASQ); the held-out test queries are scored once per row.

Indexes are built with ``IndexDir`` under ``--cache-dir`` (default benchmarks/.cache) and reused
when complete; query and chunk vectors go through the on-disk embedding cache there. Cached,
``--dataset all`` takes about 4 minutes on 2 cores; a first build embeds 24.6k chunks (about
6 minutes).

    python benchmarks/bench_retrieval_quality.py --dataset all \\
        --out benchmarks/results/retrieval_quality.json
"""

from __future__ import annotations

import os
import sys

from _bench import pin_threads

pin_threads()

import argparse  # noqa: E402
import glob  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

ROOT = Path(__file__).resolve().parent
DATA = Path(os.environ.get("BIORAG_SHARED_DATA", ROOT.parent.parent / "shared" / "data"))
PUBMEDQA = DATA / "pubmedqa" / "ori_pqal.json"
PUBMEDQA_TEST = DATA / "pubmedqa" / "test_ground_truth.json"
BIOASQ_DIR = DATA / "mirage" / "rawdata" / "bioasq"
REFERENCE = {  # the numbers (this machine, library defaults)
    "pubmedqa": {"bm25": {"R@1": 0.944}, "dense": {"R@1": 0.968}, "hybrid": {"R@1": 0.970}},
    "bioasq": {
        "bm25": {"R@10": 0.649, "MAP@10": 0.632},
        "dense": {"R@10": 0.664, "MAP@10": 0.683},
        "hybrid": {"R@10": 0.716, "MAP@10": 0.727},
    },
}
LIB_DEPTH = 100  # Searcher.search(level="doc", k=10) searches max(10k, 100) chunks per retriever
LIB_RRF_K = 60
K = 10


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- queries and qrels ---------------------------------------------------------------------------
@dataclass
class QuerySet:
    qids: list[str]
    texts: list[str]
    qrels: dict[str, dict[str, int]]  # qid -> {pmid: 1}
    alt_qrels: dict[str, dict[str, int]] | None = None  # BioASQ: the PMIDs of its gold snippets


def _bioasq_files(years: Sequence[int]) -> list[Path]:
    out: list[Path] = []
    for y in years:
        out.extend(
            sorted(Path(p) for p in glob.glob(str(BIOASQ_DIR / f"Task{y}BGoldenEnriched/*.json")))
        )
    return out


def _pmid(url: str) -> str:
    return url.rstrip("/").rsplit("/", 1)[-1].strip()


def pubmedqa_queries() -> dict[str, QuerySet]:
    data = json.loads(PUBMEDQA.read_text(encoding="utf-8"))
    test_ids = set(json.loads(PUBMEDQA_TEST.read_text(encoding="utf-8")))
    out = {}
    for split, keep in (("dev", lambda p: p not in test_ids), ("test", lambda p: p in test_ids)):
        pmids = [p for p in data if keep(p)]
        out[split] = QuerySet(
            pmids, [data[p]["QUESTION"] for p in pmids], {p: {p: 1} for p in pmids}
        )
    return out


def bioasq_queries(corpus_pmids: set[str], restrict: bool) -> dict[str, QuerySet]:
    out = {}
    for split, years in (("dev", (7, 8, 9, 10)), ("test", (11,))):
        qids, texts, qrels, alt = [], [], {}, {}
        for f in _bioasq_files(years):
            for q in json.loads(f.read_text(encoding="utf-8"))["questions"]:
                rel = {_pmid(u): 1 for u in q.get("documents", [])}
                snip = {_pmid(sn["document"]): 1 for sn in q.get("snippets", [])}
                if restrict:
                    rel = {p: 1 for p in rel if p in corpus_pmids}
                    snip = {p: 1 for p in snip if p in corpus_pmids}
                if not rel:
                    continue
                qid = f"{q['id']}"
                if qid in qrels:  # the same question id in two test batches: keep the first
                    continue
                qids.append(qid)
                texts.append(q["body"])
                qrels[qid] = rel
                alt[qid] = snip or rel
        out[split] = QuerySet(qids, texts, qrels, alt)
    return out


# -- indexes -------------------------------------------------------------------------------------
def load_docs(dataset: str) -> Any:
    from biorag.corpus.loaders import load_corpora, load_corpus

    if dataset == "pubmedqa":
        return load_corpus(PUBMEDQA, "pubmedqa")
    return load_corpora(_bioasq_files((7, 8, 9, 10, 11)), "bioasq")


def ensure_index(dataset: str, cache_dir: Path, embedder: Any) -> tuple[Path, dict[str, float]]:
    """The index directory of ``dataset`` under ``cache_dir``, built (or finished) if needed."""
    from biorag.retrieve.index import IndexDir, index_stats

    path = cache_dir / "index" / dataset
    timing: dict[str, float] = {}
    if (path / "manifest.json").is_file() and index_stats(path)["complete"]:
        return path, timing
    t = time.perf_counter()
    loaded = load_docs(dataset)
    idx = IndexDir(path, embedder, name=dataset)
    try:
        report = idx.add(loaded)
    finally:
        idx.close()
    timing = {"build_s": round(time.perf_counter() - t, 1), **report.seconds}
    log(f"built {path}: {report.documents_total} docs, {report.chunks_total} chunks, {timing}")
    return path, timing


def one_dense_index(path: Path, dim: int) -> Any:
    """The FAISS index of an index directory built in one go: its one segment (or, built
    before segments, its ``dense/``)."""
    from biorag.retrieve.dense import DenseIndex
    from biorag.retrieve.segments import load_segments, read_state

    state = read_state(path)
    if state is None:
        return DenseIndex.load(path / "dense", expected_dim=dim)
    segments = load_segments(path, state, dim)
    if len(segments) != 1 or segments[0].deleted is not None:
        raise RuntimeError(f"{path}: rows added or removed after its build; rebuild it")
    return segments[0].dense


def make_embedder(cache_dir: Path) -> Any:
    from biorag.config import EmbedSettings
    from biorag.embed.factory import build_embedder

    return build_embedder(EmbedSettings(), cache_dir / "embed")


# -- an in-memory, vectorized copy of the index for the experiments ------------------------------
class Corpus:
    """Chunk texts, vectors and the chunk -> document map of one index, with a BM25 that takes
    weighted queries (RM3) and any k1/b, and exact dense scoring (any query vector)."""

    def __init__(self, path: Path, embedder: Any):
        from biorag.corpus.store import CorpusStore
        from biorag.retrieve.bm25 import Tokenizer
        from biorag.retrieve.index import read_manifest

        self.path = path
        self.embedder = embedder
        manifest = read_manifest(path)
        store = CorpusStore(path / "corpus.sqlite")
        try:
            self.chunk_ids, self.texts = store.all_chunk_texts()
            vids, self.vectors = store.all_vectors(manifest["dim"])
            if vids != self.chunk_ids:
                raise RuntimeError(f"{path}: chunk vectors missing or out of order; rebuild")
            chunk_doc = store.chunk_doc_ids()
            docs = list(store.iter_documents())
            chunk_pos = {
                cid: (s, e)
                for cid, s, e in store.db.execute("SELECT id, start, end FROM chunks ORDER BY seq")
            }
        finally:
            store.close()
        doc_index = {d.id: i for i, d in enumerate(docs)}
        self.pmids = [d.source_id for d in docs]
        self.pmid_index = {p: i for i, p in enumerate(self.pmids)}
        self.n_docs = len(docs)
        self.chunk_doc = np.asarray([doc_index[chunk_doc[c]] for c in self.chunk_ids], np.int64)
        self.n = len(self.chunk_ids)
        # ties are broken like the library: by chunk id (RRF) or by index position (BM25)
        self.id_order = np.empty(self.n, np.int64)
        self.id_order[np.argsort(np.asarray(self.chunk_ids))] = np.arange(self.n)
        # the fields the loaders keep: MeSH terms (PubMedQA), the section of each snippet (BioASQ)
        self.meshes = [" ; ".join(d.metadata.get("meshes") or []) for d in docs]
        self.is_title = np.zeros(self.n, bool)
        for i, cid in enumerate(self.chunk_ids):
            d = docs[self.chunk_doc[i]]
            sections = d.metadata.get("sections") or []
            if sections and d.spans:
                s, e = chunk_pos[cid]
                for (a, b), sec in zip(d.spans, sections, strict=False):
                    if a <= s < b or (s <= a and e >= b):
                        self.is_title[i] = sec == "title"
                        break
        self.tok = Tokenizer()
        self.vocab: dict[str, int] = {}
        chunk_tf = self._counts(self.texts, grow=True)  # chunks x vocab term counts
        mesh_tf = self._counts(self.meshes, grow=True)
        self.doc_agg = sp.csr_matrix(
            (np.ones(self.n, np.float32), (np.arange(self.n), self.chunk_doc)),
            shape=(self.n, self.n_docs),
        )
        width = len(self.vocab)
        chunk_tf.resize((self.n, width))
        self.unit_tf = {
            "chunk": chunk_tf,
            # one BM25 document per corpus document: its text is its chunks joined
            "doc": (self.doc_agg.T @ chunk_tf).tocsr(),
            "mesh": mesh_tf,
        }
        self._bm25_cache: dict[tuple, sp.csr_matrix] = {}
        self.centroids = self._centroids()
        # the index's own FAISS index, so dense rankings (and their near-ties) are the library's
        self.faiss = one_dense_index(path, manifest["dim"])
        if self.faiss.ids != self.chunk_ids:
            raise RuntimeError(f"{path}: dense index ids out of order; rebuild")

    # BM25 ---------------------------------------------------------------------------------------
    def _counts(self, texts: Sequence[str], grow: bool = False) -> sp.csr_matrix:
        rows, cols = [], []
        for i, text in enumerate(texts):
            for stem in self.tok(text):
                j = self.vocab.get(stem)
                if j is None:
                    if not grow:
                        continue
                    j = self.vocab[stem] = len(self.vocab)
                rows.append(i)
                cols.append(j)
        m = sp.csr_matrix(
            (np.ones(len(rows), np.float32), (rows, cols)), shape=(len(texts), len(self.vocab))
        )
        m.sum_duplicates()
        return m

    @staticmethod
    def bm25_weights(tf: sp.csr_matrix, k1: float, b: float) -> sp.csr_matrix:
        """bm25s 'lucene' BM25 term weights: idf * tf / (tf + k1 (1 - b + b dl/avgdl))."""
        n = tf.shape[0]
        dl = np.asarray(tf.sum(axis=1)).ravel()
        avgdl = dl.mean() if n else 1.0
        df = np.bincount(tf.indices, minlength=tf.shape[1]).astype(np.float64)
        idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
        w = tf.copy().astype(np.float64)
        rows = np.repeat(np.arange(n), np.diff(w.indptr))
        w.data = idf[w.indices] * w.data / (w.data + k1 * (1 - b + b * dl[rows] / avgdl))
        return w.astype(np.float32).T.tocsr()  # vocab x items

    def weights(self, unit: str, k1: float, b: float) -> sp.csr_matrix:
        key = (unit, k1, b)
        if key not in self._bm25_cache:
            self._bm25_cache[key] = self.bm25_weights(self.unit_tf[unit], k1, b)
        return self._bm25_cache[key]

    def query_tf(self, texts: Sequence[str]) -> sp.csr_matrix:
        return self._counts(texts)

    def bm25_scores(self, q: sp.csr_matrix, unit: str, k1: float, b: float) -> np.ndarray:
        """Query (term weights, queries x vocab) times BM25 weights: queries x items."""
        return np.asarray((q @ self.weights(unit, k1, b)).todense(), dtype=np.float32)

    # dense --------------------------------------------------------------------------------------
    def _centroids(self) -> np.ndarray:
        c = (self.doc_agg.T @ self.vectors).astype(np.float32)
        return c / np.maximum(np.linalg.norm(c, axis=1, keepdims=True), 1e-12)

    def dense_scores(self, qvecs: np.ndarray, unit: str = "chunk") -> np.ndarray:
        mat = self.vectors if unit == "chunk" else self.centroids
        return qvecs.astype(np.float32) @ mat.T


# -- rankings as flat arrays ---------------------------------------------------------------------
@dataclass
class Ranked:
    """Ranked candidates of many queries, flattened: sorted by query, then best first."""

    nq: int
    q: np.ndarray
    item: np.ndarray
    score: np.ndarray
    rank: np.ndarray  # 1-based within its query

    def cut(self, depth: int) -> Ranked:
        m = self.rank <= depth
        return Ranked(self.nq, self.q[m], self.item[m], self.score[m], self.rank[m])

    def top_items(self, k: int = K) -> np.ndarray:
        out = np.full((self.nq, k), -1, np.int64)
        m = self.rank <= k
        out[self.q[m], self.rank[m] - 1] = self.item[m]
        return out


def _ranked(
    nq: int, q: np.ndarray, item: np.ndarray, score: np.ndarray, *ties: np.ndarray
) -> Ranked:
    """Sort by query, score descending, then the tie keys (ascending, last one first)."""
    order = np.lexsort((*ties[::-1], -score, q)) if ties else np.lexsort((-score, q))
    q, item, score = q[order], item[order], score[order]
    starts = np.searchsorted(q, np.arange(nq))
    rank = np.arange(len(q)) - starts[q] + 1
    return Ranked(nq, q, item, score, rank)


def top_of(scores: np.ndarray, depth: int, positive_only: bool) -> Ranked:
    """Top ``depth`` columns of each row (ties: lower column first, as bm25s and FAISS do)."""
    nq, n = scores.shape
    depth = min(depth, n)
    part = np.argpartition(-scores, depth - 1, axis=1)[:, :depth]
    vals = np.take_along_axis(scores, part, axis=1).ravel().astype(np.float64)
    q = np.repeat(np.arange(nq, dtype=np.int32), depth)
    item = part.ravel().astype(np.int32)
    if positive_only:
        keep = vals > 0
        q, item, vals = q[keep], item[keep], vals[keep]
    return _ranked(nq, q, item, vals, item)


def rrf(
    lists: Sequence[Ranked], weights: Sequence[float], k: float, id_order: np.ndarray
) -> Ranked:
    """Weighted reciprocal rank fusion with ``reciprocal_rank_fusion``'s tie-breaking (best
    rank, then earliest list, then item id)."""
    nq = lists[0].nq
    n_items = len(id_order)
    q = np.concatenate([r.q for r in lists])
    item = np.concatenate([r.item for r in lists])
    contrib = np.concatenate([w / (k + r.rank) for r, w in zip(lists, weights, strict=True)])
    best = np.concatenate([r.rank * len(lists) + i for i, r in enumerate(lists)])
    key = q.astype(np.int64) * n_items + item
    uniq, inv = np.unique(key, return_inverse=True)
    score = np.bincount(inv, weights=contrib, minlength=len(uniq))
    best_key = np.full(len(uniq), np.iinfo(np.int64).max)
    np.minimum.at(best_key, inv, best)
    uq, ui = uniq // n_items, uniq % n_items
    return _ranked(nq, uq, ui, score, best_key, id_order[ui])


def combsum(lists: Sequence[Ranked], weights: Sequence[float], id_order: np.ndarray) -> Ranked:
    """Convex score fusion: per query, each list's scores min-max normalized over its
    candidates (absent = 0), weighted and summed (``biorag.retrieve.fusion.convex_score_fusion``
    vectorized)."""
    nq = lists[0].nq
    n_items = len(id_order)
    qs, items, vals, best = [], [], [], []
    for i, (r, w) in enumerate(zip(lists, weights, strict=True)):
        lo = np.full(nq, np.inf)
        hi = np.full(nq, -np.inf)
        np.minimum.at(lo, r.q, r.score)
        np.maximum.at(hi, r.q, r.score)
        span = hi - lo
        ok = span[r.q] > 0  # all scores equal: every candidate counts 1
        norm = np.where(ok, (r.score - lo[r.q]) / np.where(ok, span[r.q], 1.0), 1.0)
        qs.append(r.q)
        items.append(r.item)
        vals.append(w * norm)
        best.append(r.rank * len(lists) + i)
    q, item = np.concatenate(qs), np.concatenate(items)
    uniq, inv = np.unique(q.astype(np.int64) * n_items + item, return_inverse=True)
    score = np.bincount(inv, weights=np.concatenate(vals), minlength=len(uniq))
    best_key = np.full(len(uniq), np.iinfo(np.int64).max)
    np.minimum.at(best_key, inv, np.concatenate(best))
    uq, ui = uniq // n_items, uniq % n_items
    return _ranked(nq, uq, ui, score, best_key, id_order[ui])


def aggregate(r: Ranked, item_doc: np.ndarray, how: str, tau: float = 1.0) -> Ranked:
    """Chunk -> document scores: ``max`` (= the first occurrence of each document in the
    chunk ranking, what ``Searcher.search(level="doc")`` does), ``sum``, ``top2`` (sum of the
    two best), ``lse`` (tau * log sum exp(score / tau)). Ties: the document whose best chunk
    came first."""
    pos = np.arange(len(r.q))  # r is sorted best first within each query
    doc = item_doc[r.item]
    n_docs = int(item_doc.max()) + 1
    key = r.q.astype(np.int64) * n_docs + doc
    order = np.lexsort((pos, key))  # groups by (query, doc), best chunk first within a group
    key_s, score_s, pos_s = key[order], r.score[order], pos[order]
    starts = np.flatnonzero(np.r_[True, key_s[1:] != key_s[:-1]])
    first = score_s[starts]
    if how == "max":
        agg = np.maximum.reduceat(score_s, starts)
    elif how == "sum":
        agg = np.add.reduceat(score_s, starts)
    elif how == "top2":
        nxt = starts + 1
        ends = np.r_[starts[1:], len(key_s)]
        second = np.where(nxt < ends, score_s[np.minimum(nxt, len(key_s) - 1)], 0.0)
        agg = first + second
    elif how == "lse":
        mx = np.maximum.reduceat(score_s, starts)
        grp = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(key_s)]))
        agg = mx + tau * np.log(np.add.reduceat(np.exp((score_s - mx[grp]) / tau), starts))
    else:
        raise ValueError(how)
    first_pos = pos_s[starts]
    gk = key_s[starts]
    return _ranked(r.nq, gk // n_docs, gk % n_docs, agg, first_pos)


# -- metrics -------------------------------------------------------------------------------------
METRICS = ("R@1", "R@10", "MRR@10", "AP@10", "MAP@10")
ALT_METRICS = ("R@10", "MAP@10")


def per_query(top: np.ndarray, rel: list[set[int]], n_rel: list[int]) -> dict[str, np.ndarray]:
    """Per query: R@1, R@10, MRR@10 (RR@10), AP@10 (ir_measures: / R) and MAP@10 (BioASQ:
    / min(R, 10)). ``rel`` holds the corpus indexes of the relevant documents, ``n_rel`` R
    (which counts relevant documents absent from the corpus too)."""
    out = {m: np.zeros(len(rel)) for m in METRICS}
    for i, (row, rs, r) in enumerate(zip(top, rel, n_rel, strict=True)):
        hits = [j for j, d in enumerate(row[:K], start=1) if d >= 0 and d in rs]
        if not hits:
            continue
        prec = sum((j + 1) / rank for j, rank in enumerate(hits))
        out["R@1"][i] = (hits[0] == 1) / r
        out["R@10"][i] = len(hits) / r
        out["MRR@10"][i] = 1.0 / hits[0]
        out["AP@10"][i] = prec / r
        out["MAP@10"][i] = prec / min(r, K)
    return out


def metrics(top: np.ndarray, rel: list[set[int]], n_rel: list[int]) -> dict[str, float]:
    return {m: float(v.mean()) for m, v in per_query(top, rel, n_rel).items()}


def paired_ci(a: np.ndarray, b: np.ndarray, n: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95% paired-bootstrap interval of mean(a - b)."""
    d = a - b
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n, len(d)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


# -- the configurable pipeline -------------------------------------------------------------------
@dataclass(frozen=True)
class Cfg:
    """One retrieval configuration (the defaults are the library's hybrid)."""

    retrievers: tuple[str, ...] = ("bm25", "dense")
    k1: float = 1.5
    b: float = 0.75
    bm25_unit: str = "chunk"  # chunk | doc (one BM25 document per corpus document)
    dense_unit: str = "chunk"  # chunk | centroid (mean of a document's chunk vectors)
    depth: int = LIB_DEPTH  # candidates per retriever before fusion
    fusion: str = "rrf"  # rrf | comb (convex fusion of min-max normalized scores)
    level: str = "chunk"  # fuse chunk rankings then aggregate, or aggregate then fuse docs
    rrf_k: float = LIB_RRF_K
    w_dense: float = 0.5  # dense weight; BM25 gets 1 - w_dense
    agg: str = "max"  # chunk -> doc: max (first occurrence) | sum | top2 | lse
    tau: float = 1.0
    rm3: tuple[int, int, float] | None = None  # feedback items, expansion terms, original weight
    rocchio: tuple[int, float] | None = None  # feedback items, beta
    prf_from: str = "self"  # self (each retriever's own first pass) | fused (hybrid docs)
    mesh_w: float = 0.0  # PubMedQA: weight of a MeSH-terms BM25 ranking fused at doc level
    title_w: float = 0.0  # BioASQ: boost (1 + w) of title snippets' scores

    def but(self, **kw: Any) -> Cfg:
        return Cfg(**{**self.__dict__, **kw})


MAX_DEPTH = 500  # first passes are kept this deep; --depth attempts go up to it


@dataclass
class Split:
    qs: QuerySet
    q_tf: sp.csr_matrix
    q_vec: np.ndarray
    rel: list[set[int]]
    n_rel: list[int]
    alt_rel: list[set[int]] | None = None
    alt_n_rel: list[int] | None = None
    memo: dict[Any, Ranked] = field(default_factory=dict)


class Bench:
    def __init__(self, corpus: Corpus, splits: dict[str, QuerySet]):
        self.c = corpus
        self.splits: dict[str, Split] = {}
        for name, qs in splits.items():
            q_tf = corpus.query_tf(qs.texts)
            q_vec = corpus.embedder.embed(list(qs.texts))
            rel, n_rel = self._rel(qs.qids, qs.qrels)
            split = Split(qs, q_tf, np.asarray(q_vec, np.float32), rel, n_rel)
            if qs.alt_qrels:
                split.alt_rel, split.alt_n_rel = self._rel(qs.qids, qs.alt_qrels)
            self.splits[name] = split
        self.doc_ids = np.arange(corpus.n_docs)
        self.doc_order = np.arange(corpus.n_docs)

    def _rel(self, qids: list[str], qrels: dict[str, dict[str, int]]) -> tuple[list, list]:
        idx = self.c.pmid_index
        return [{idx[p] for p in qrels[q] if p in idx} for q in qids], [len(qrels[q]) for q in qids]

    # first passes ---------------------------------------------------------------------------
    def _bm25(
        self, s: Split, cfg: Cfg, make_q: Callable[[], Any] | None = None, tag: Any = None
    ) -> Ranked:
        key = ("bm25", cfg.bm25_unit, cfg.k1, cfg.b, tag)
        if key not in s.memo:
            qm = s.q_tf if make_q is None else make_q()
            scores = self.c.bm25_scores(qm, cfg.bm25_unit, cfg.k1, cfg.b)
            s.memo[key] = top_of(scores, MAX_DEPTH, positive_only=True)
        return s.memo[key]

    def _dense(
        self, s: Split, cfg: Cfg, make_q: Callable[[], Any] | None = None, tag: Any = None
    ) -> Ranked:
        key = ("dense", cfg.dense_unit, tag)
        if key not in s.memo:
            qv = s.q_vec if make_q is None else make_q()
            if cfg.dense_unit == "chunk":
                scores, rows = self.c.faiss._index.search(np.ascontiguousarray(qv), MAX_DEPTH)
                nq, depth = rows.shape
                s.memo[key] = Ranked(
                    nq,
                    np.repeat(np.arange(nq, dtype=np.int32), depth),
                    rows.ravel().astype(np.int32),
                    scores.ravel().astype(np.float64),
                    np.tile(np.arange(1, depth + 1), nq),
                )
            else:
                scores = self.c.dense_scores(qv, cfg.dense_unit)
                s.memo[key] = top_of(scores, MAX_DEPTH, positive_only=False)
        return s.memo[key]

    def _mesh(self, s: Split, cfg: Cfg) -> Ranked:
        key = ("mesh", cfg.k1, cfg.b)
        if key not in s.memo:
            scores = self.c.bm25_scores(s.q_tf, "mesh", cfg.k1, cfg.b)
            s.memo[key] = top_of(scores, MAX_DEPTH, positive_only=True)
        return s.memo[key]

    def _unit_tf(self, unit: str) -> sp.csr_matrix:
        return self.c.unit_tf["doc" if unit == "doc" else "chunk"]

    def _feedback(self, s: Split, cfg: Cfg, retriever: str) -> tuple[sp.csr_matrix, str, Any]:
        """Feedback weights (queries x units, rows sum to 1) and the unit they are over."""
        n_fb = cfg.rm3[0] if retriever == "bm25" else cfg.rocchio[0]  # type: ignore[index]
        if cfg.prf_from == "fused":  # the top documents of the plain (PRF-free) configuration
            first = self.rank_docs(s, cfg.but(rm3=None, rocchio=None)).cut(n_fb)
            unit, n_units = "doc", self.c.n_docs
        elif retriever == "bm25":
            first = self._bm25(s, cfg).cut(n_fb)
            unit, n_units = cfg.bm25_unit, self._unit_tf(cfg.bm25_unit).shape[0]
        else:
            first = self._dense(s, cfg).cut(n_fb)
            unit = "doc" if cfg.dense_unit == "centroid" else "chunk"
            n_units = self.c.n_docs if unit == "doc" else self.c.n
        if retriever == "bm25" and cfg.prf_from == "self":
            w = first.score  # RM3: P(d) proportional to the first-pass score
        else:
            w = np.ones_like(first.score)  # Rocchio: the centroid of the feedback set
        fb = sp.csr_matrix((w, (first.q, first.item)), shape=(len(s.qs.qids), n_units))
        norm = np.asarray(fb.sum(axis=1)).ravel()
        fb = sp.diags(1.0 / np.maximum(norm, 1e-12)) @ fb
        return fb.tocsr(), unit, None

    def _rm3_query(self, s: Split, cfg: Cfg) -> sp.csr_matrix:
        _, n_terms, lam = cfg.rm3  # type: ignore[misc]
        fb, unit, _ = self._feedback(s, cfg, "bm25")
        tf = self._unit_tf(unit)
        dl = np.asarray(tf.sum(axis=1)).ravel()
        p_t_d = sp.diags(1.0 / np.maximum(dl, 1.0)) @ tf
        rel_model = (fb @ p_t_d).tocsr()  # queries x vocab: P(t | R)
        rows, cols, vals = [], [], []
        for i in range(rel_model.shape[0]):
            lo, hi = rel_model.indptr[i], rel_model.indptr[i + 1]
            v, c = rel_model.data[lo:hi], rel_model.indices[lo:hi]
            if len(v) > n_terms:
                keep = np.argpartition(-v, n_terms - 1)[:n_terms]
                v, c = v[keep], c[keep]
            if len(v):
                rows.extend([i] * len(v))
                cols.extend(c.tolist())
                vals.extend((v / v.sum()).tolist())
        exp = sp.csr_matrix((vals, (rows, cols)), shape=s.q_tf.shape)
        qlen = np.asarray(s.q_tf.sum(axis=1)).ravel()
        orig = sp.diags(1.0 / np.maximum(qlen, 1.0)) @ s.q_tf
        return (lam * orig + (1 - lam) * exp).tocsr()

    def _rocchio_vec(self, s: Split, cfg: Cfg) -> np.ndarray:
        _, beta = cfg.rocchio  # type: ignore[misc]
        fb, unit, _ = self._feedback(s, cfg, "dense")
        mat = self.c.centroids if unit == "doc" else self.c.vectors
        qv = s.q_vec + beta * np.asarray(fb @ mat, np.float32)
        return qv / np.maximum(np.linalg.norm(qv, axis=1, keepdims=True), 1e-12)

    def lists(self, s: Split, cfg: Cfg) -> list[tuple[str, Ranked, bool]]:
        """(retriever, ranking cut to cfg.depth, ranks documents?) for each retriever."""
        out = []
        if "bm25" in cfg.retrievers:
            if cfg.rm3:
                tag = ("rm3", cfg.rm3, self._feedback_tag(cfg))
                r = self._bm25(s, cfg, lambda: self._rm3_query(s, cfg), tag)
            else:
                r = self._bm25(s, cfg)
            out.append(("bm25", r.cut(cfg.depth), cfg.bm25_unit == "doc"))
        if "dense" in cfg.retrievers:
            if cfg.rocchio:
                tag = ("rocchio", cfg.rocchio, self._feedback_tag(cfg))
                r = self._dense(s, cfg, lambda: self._rocchio_vec(s, cfg), tag)
            else:
                r = self._dense(s, cfg)
            out.append(("dense", r.cut(cfg.depth), cfg.dense_unit == "centroid"))
        return out

    def _feedback_tag(self, cfg: Cfg) -> Any:
        if cfg.prf_from == "fused":
            return ("fused", cfg.but(rm3=None, rocchio=None))
        return ("self", cfg.k1, cfg.b, cfg.bm25_unit, cfg.dense_unit)

    # fusion and aggregation ----------------------------------------------------------------
    def rank_docs(self, s: Split, cfg: Cfg) -> Ranked:
        lists = self.lists(s, cfg)
        c = self.c
        weights = {"bm25": 1.0 - cfg.w_dense, "dense": cfg.w_dense}
        if len(lists) == 1 and not cfg.mesh_w:
            name, r, is_doc = lists[0]
            r = self._title_boost(r, cfg, is_doc)
            return r if is_doc else aggregate(r, c.chunk_doc, cfg.agg, cfg.tau)
        fuse: Callable[..., Ranked]
        if cfg.fusion == "rrf":
            fuse = lambda ls, ws, order: rrf(ls, ws, cfg.rrf_k, order)  # noqa: E731
        else:
            fuse = combsum
        doc_level = cfg.level == "doc" or any(is_doc for _, _, is_doc in lists) or cfg.mesh_w
        if not doc_level:
            fused = fuse([r for _, r, _ in lists], [weights[n] for n, _, _ in lists], c.id_order)
            return aggregate(self._title_boost(fused, cfg, False), c.chunk_doc, cfg.agg, cfg.tau)
        doc_lists, ws = [], []
        for name, r, is_doc in lists:
            r = self._title_boost(r, cfg, is_doc)
            doc_lists.append(r if is_doc else aggregate(r, c.chunk_doc, cfg.agg, cfg.tau))
            ws.append(weights[name])
        if cfg.mesh_w:
            doc_lists.append(self._mesh(s, cfg).cut(cfg.depth))
            ws.append(cfg.mesh_w)
        return fuse(doc_lists, ws, self.doc_order)

    def _title_boost(self, r: Ranked, cfg: Cfg, is_doc: bool) -> Ranked:
        if not cfg.title_w or is_doc:
            return r
        boost = 1.0 + cfg.title_w * self.c.is_title[r.item]
        return _ranked(r.nq, r.q, r.item, r.score * boost, r.rank)

    def evaluate(self, split: str, cfg: Cfg) -> dict[str, float]:
        return {m: float(v.mean()) for m, v in self.per_query(split, cfg).items()}

    def per_query(self, split: str, cfg: Cfg) -> dict[str, np.ndarray]:
        s = self.splits[split]
        top = self.rank_docs(s, cfg).top_items(K)
        out = per_query(top, s.rel, s.n_rel)
        if s.alt_rel is not None and s.alt_n_rel is not None:
            alt = per_query(top, s.alt_rel, s.alt_n_rel)
            out.update({f"{m} (snippet qrels)": alt[m] for m in ALT_METRICS})
        return out


# -- the library path ----------------------------------------------------------------------------
def library_rows(
    path: Path, embedder: Any, qs: QuerySet, qrels_variants: dict[str, dict], runs_dir: Path
) -> dict[str, dict[str, dict[str, float]]]:
    """``Searcher.search(level="doc")`` per retriever, written as a TREC run and scored with
    ``evaluate_run`` (ir_measures) plus BioASQ's MAP@10 (AP with min(R, 10))."""
    from biorag.retrieve.search import Searcher
    from biorag.retrieve.trec import evaluate_run, read_run, write_run

    searcher = Searcher(path, embedder)
    out: dict[str, dict[str, dict[str, float]]] = {}
    try:
        for retriever in ("bm25", "dense", "hybrid"):
            res = searcher.search(list(qs.texts), k=K, retriever=retriever, level="doc")
            run = {
                q: [(p.source_id, p.score) for p in ps] for q, ps in zip(qs.qids, res, strict=True)
            }
            run_path = write_run(runs_dir / f"{path.name}-{retriever}.run", run, tag=retriever)
            # ir_measures (trec_eval) re-sorts each query by score and breaks ties by doc id,
            # which reorders RRF's many tied fused scores; score by rank so it sees our order.
            run = {
                q: [(d, float(K - i)) for i, (d, _) in enumerate(ps)]
                for q, ps in read_run(run_path).items()
            }
            for variant, qrels in qrels_variants.items():
                ev = evaluate_run(run, qrels, ("R@1", "R@10", "RR@10", "AP@10"))
                ev["MRR@10"] = ev.pop("RR@10")
                ev["MAP@10"] = float(np.mean([_bioasq_ap(run.get(q, []), qrels[q]) for q in qrels]))
                out.setdefault(variant, {})[retriever] = ev
    finally:
        searcher.close()
    return out


def _bioasq_ap(ranked: Sequence[tuple[str, float]], rel: dict[str, int]) -> float:
    hits = [i for i, (d, _) in enumerate(ranked[:K], start=1) if rel.get(d, 0) > 0]
    return sum((j + 1) / r for j, r in enumerate(hits)) / min(len(rel), K) if rel else 0.0


def library_fusion_check(bench: Bench, split: str, cfg: Cfg) -> dict[str, float]:
    """``cfg`` (a chunk-level hybrid) run through the library's own pieces, query by query:
    ``BM25Index.build(k1, b)``, the index's ``DenseIndex``, ``convex_score_fusion`` (or
    ``reciprocal_rank_fusion``), first occurrence of each document -- as ``Searcher`` would
    with the recommended settings. Returns its metrics (they should equal the bench row's)."""
    from biorag.retrieve.bm25 import BM25Index
    from biorag.retrieve.fusion import convex_score_fusion, reciprocal_rank_fusion

    c, s = bench.c, bench.splits[split]
    bm = BM25Index.build(c.chunk_ids, c.texts, k1=cfg.k1, b=cfg.b)
    b_hits = bm.search(list(s.qs.texts), cfg.depth)
    d_hits = c.faiss.search(s.q_vec, cfg.depth)
    weights = [1.0 - cfg.w_dense, cfg.w_dense]
    chunk_index = {cid: i for i, cid in enumerate(c.chunk_ids)}
    top = np.full((len(b_hits), K), -1, np.int64)
    for qi, (bh, dh) in enumerate(zip(b_hits, d_hits, strict=True)):
        if cfg.fusion == "comb":
            fused = convex_score_fusion([bh, dh], weights, limit=cfg.depth)
        else:
            fused = reciprocal_rank_fusion(
                [bh, dh], k=int(cfg.rrf_k), weights=weights, limit=cfg.depth
            )
        seen: list[int] = []
        for h in fused:
            d = int(c.chunk_doc[chunk_index[h.id]])
            if d not in seen:
                seen.append(d)
                if len(seen) == K:
                    break
        top[qi, : len(seen)] = seen
    return metrics(top, s.rel, s.n_rel)


# -- attempts ------------------------------------------------------------------------------------
@dataclass
class Row:
    group: str
    name: str
    cfg: Cfg
    dev: float
    test: dict[str, float]
    delta: float = 0.0  # test objective minus the library hybrid's
    ci: tuple[float, float] = (0.0, 0.0)  # its 95% paired-bootstrap interval

    def to_dict(self) -> dict[str, Any]:
        diff = {k: v for k, v in self.cfg.__dict__.items() if Cfg().__dict__[k] != v}
        return {
            "group": self.group,
            "name": self.name,
            "config": diff,
            "dev_objective": self.dev,
            "test": self.test,
            "test_objective_delta_vs_hybrid": self.delta,
            "delta_95ci": list(self.ci),
        }


class Tuner:
    def __init__(self, bench: Bench, objective: str):
        self.bench = bench
        self.objective = objective
        self.rows: list[Row] = []
        self.evals = 0

    def dev(self, cfg: Cfg) -> float:
        self.evals += 1
        return self.bench.evaluate("dev", cfg)[self.objective]

    def best(self, base: Cfg, grid: dict[str, Sequence[Any]]) -> tuple[Cfg, float]:
        """The grid point (over ``base``) with the best dev objective (first one on ties)."""
        best_cfg, best_val = base, -1.0
        keys = list(grid)
        for values in itertools.product(*(grid[k] for k in keys)):
            cfg = base.but(**dict(zip(keys, values, strict=True)))
            val = self.dev(cfg)
            if val > best_val + 1e-12:
                best_cfg, best_val = cfg, val
        return best_cfg, best_val

    def row(self, group: str, name: str, cfg: Cfg, dev: float | None = None) -> Row:
        dev = self.dev(cfg) if dev is None else dev
        pq = self.bench.per_query("test", cfg)
        base = self.bench.per_query("test", HYBRID)[self.objective]
        row = Row(group, name, cfg, dev, {m: float(v.mean()) for m, v in pq.items()})
        row.delta = float((pq[self.objective] - base).mean())
        row.ci = paired_ci(pq[self.objective], base)
        self.rows.append(row)
        log(
            f"  {group:<12} {name:<58} dev {dev:.4f}  test "
            + _fmt(row.test)
            + f"  delta {row.delta:+.4f} [{row.ci[0]:+.4f}, {row.ci[1]:+.4f}]"
        )
        return row

    def tuned(self, group: str, name: str, base: Cfg, grid: dict[str, Sequence[Any]]) -> Row:
        cfg, val = self.best(base, grid)
        picked = ", ".join(f"{k}={getattr(cfg, k)}" for k in grid)
        return self.row(group, f"{name} [{picked}]", cfg, val)


def _fmt(m: dict[str, float]) -> str:
    return " ".join(f"{k} {v:.3f}" for k, v in m.items())


BM25 = Cfg(retrievers=("bm25",))
DENSE = Cfg(retrievers=("dense",))
HYBRID = Cfg()


def attempts(t: Tuner, dataset: str) -> Cfg:
    """Every attempt, tuned on dev, scored on test; returns the combined configuration."""
    t.row("baseline", "BM25 (first occurrence)", BM25)
    t.row("baseline", "dense (first occurrence)", DENSE)
    t.row("baseline", "hybrid RRF k=60, equal weights, depth 100", HYBRID)

    # (a) fusion weights and rrf k
    t.tuned(
        "a fusion",
        "hybrid weighted RRF",
        HYBRID,
        {"w_dense": (0.3, 0.4, 0.5, 0.6, 0.7, 0.8), "rrf_k": (1, 5, 10, 20, 40, 60, 100)},
    )
    t.tuned(
        "a fusion",
        "hybrid RRF, dense weight only (k=60)",
        HYBRID,
        {"w_dense": (0.3, 0.4, 0.5, 0.6, 0.7, 0.8)},
    )
    t.tuned(
        "a fusion",
        "hybrid convex score fusion (min-max)",
        HYBRID.but(fusion="comb"),
        {"w_dense": (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)},
    )

    # (b) chunk -> document aggregation
    for name, base in (("BM25", BM25), ("dense", DENSE)):
        for agg in ("sum", "top2"):
            t.row("b aggregate", f"{name}, doc = {agg} of chunk scores", base.but(agg=agg))
    t.tuned(
        "b aggregate",
        "BM25, doc = log-sum-exp of chunk scores",
        BM25.but(agg="lse"),
        {"tau": (0.5, 1.0, 2.0, 4.0)},
    )
    t.tuned(
        "b aggregate",
        "dense, doc = log-sum-exp of chunk cosines",
        DENSE.but(agg="lse"),
        {"tau": (0.01, 0.02, 0.05, 0.1)},
    )
    t.row("b aggregate", "BM25 over whole documents", BM25.but(bm25_unit="doc"))
    t.row("b aggregate", "dense, document centroid vectors", DENSE.but(dense_unit="centroid"))
    for agg in ("sum", "top2"):
        t.row("b aggregate", f"hybrid, doc = {agg} of chunk RRF scores", HYBRID.but(agg=agg))
    for agg in ("max", "sum", "top2"):
        t.row(
            "b aggregate",
            f"hybrid, docs ranked by {agg} per retriever, then RRF",
            HYBRID.but(level="doc", agg=agg),
        )
    t.row(
        "b aggregate", "hybrid of whole-doc BM25 + dense (first occ.)", HYBRID.but(bm25_unit="doc")
    )
    t.row(
        "b aggregate",
        "hybrid of whole-doc BM25 + centroids",
        HYBRID.but(bm25_unit="doc", dense_unit="centroid"),
    )

    # (c) pseudo-relevance feedback
    rm3 = t.tuned(
        "c PRF",
        "BM25 + RM3 (own top chunks)",
        BM25,
        {"rm3": [(n, m, lam) for n in (3, 5, 10) for m in (10, 20, 40) for lam in (0.5, 0.7, 0.9)]},
    ).cfg.rm3
    roc = t.tuned(
        "c PRF",
        "dense + Rocchio (own top chunks)",
        DENSE,
        {"rocchio": [(n, beta) for n in (3, 5, 10) for beta in (0.25, 0.5, 1.0)]},
    ).cfg.rocchio
    t.row(
        "c PRF",
        f"hybrid of BM25+RM3 {rm3} and dense+Rocchio {roc}",
        HYBRID.but(rm3=rm3, rocchio=roc),
    )
    t.tuned(
        "c PRF",
        "hybrid; RM3+Rocchio from the hybrid's top docs",
        HYBRID.but(prf_from="fused"),
        {
            "rm3": [(n, 20, lam) for n in (3, 5) for lam in (0.5, 0.7)],
            "rocchio": [(n, beta) for n in (3, 5) for beta in (0.5, 1.0)],
        },
    )

    # (d) fields
    if dataset == "pubmedqa":
        t.tuned(
            "d fields",
            "hybrid + MeSH-terms BM25 as a 3rd list (curated metadata)",
            HYBRID.but(level="doc"),
            {"mesh_w": (0.1, 0.2, 0.3, 0.5)},
        )
    else:
        t.tuned(
            "d fields",
            "hybrid, title snippets' scores x (1 + w)",
            HYBRID,
            {"title_w": (0.05, 0.1, 0.25, 0.5)},
        )

    # (e) BM25 parameters, candidate depth
    kb = t.tuned(
        "e BM25/depth",
        "BM25 k1/b",
        BM25,
        {"k1": (0.6, 0.9, 1.2, 1.5, 2.0), "b": (0.3, 0.5, 0.75, 0.9, 1.0)},
    ).cfg
    t.row("e BM25/depth", f"hybrid with BM25 k1={kb.k1} b={kb.b}", HYBRID.but(k1=kb.k1, b=kb.b))
    t.tuned(
        "e BM25/depth",
        "hybrid, candidates per retriever",
        HYBRID,
        {"depth": (20, 50, 100, 200, 500)},
    )

    # all together: coordinate ascent on dev from the library hybrid
    dims: dict[str, Sequence[Any]] = {
        "fusion": ("rrf", "comb"),
        "w_dense": (0.3, 0.4, 0.5, 0.6, 0.7, 0.8),
        "rrf_k": (1, 5, 10, 20, 40, 60, 100),
        "k1": (0.6, 0.9, 1.2, 1.5, 2.0),
        "b": (0.3, 0.5, 0.75, 0.9, 1.0),
        "agg": ("max", "sum", "top2"),
        "level": ("chunk", "doc"),
        "depth": (20, 50, 100, 200, 500),
        "rm3": (None, rm3),
        "rocchio": (None, roc),
    }
    if dataset == "pubmedqa":
        dims["mesh_w"] = (0.0, 0.1, 0.2, 0.3)
    else:
        dims["title_w"] = (0.0, 0.05, 0.1, 0.25)
    cfg, val = HYBRID, t.dev(HYBRID)
    for _ in range(2):
        before = val
        for key, values in dims.items():
            cfg, val = t.best(cfg, {key: values})
        if val <= before + 1e-12:
            break
    changed = ", ".join(
        f"{k}={getattr(cfg, k)}"
        for k in dims
        if getattr(cfg, k) != getattr(HYBRID, k) and not (k == "rrf_k" and cfg.fusion == "comb")
    )
    t.row("combined", f"coordinate ascent on dev [{changed}]", cfg, val)
    return cfg


# -- driver --------------------------------------------------------------------------------------
# candidate library defaults: one configuration for every corpus, picked by the mean of the
# datasets' dev objectives (cheap: no extra retrieval pass, no per-corpus tuning)
DEFAULT_GRID: list[Cfg] = [
    HYBRID.but(fusion=f, rrf_k=rk, k1=k1, b=b)
    for f, rks in (("rrf", (5, 10, 20, 60)), ("comb", (60,)))
    for rk in rks
    for k1 in (0.9, 1.2, 1.5)
    for b in (0.5, 0.75)
]


@dataclass
class DatasetRun:
    name: str
    tuner: Tuner
    result: dict[str, Any]
    default_dev: list[float]


def run_dataset(dataset: str, cache_dir: Path, embedder: Any) -> DatasetRun:
    t0 = time.perf_counter()
    path, build = ensure_index(dataset, cache_dir, embedder)
    corpus = Corpus(path, embedder)
    if dataset == "pubmedqa":
        splits = pubmedqa_queries()
        variants = {"own PMID": splits["test"].qrels}
        objective = "MRR@10"
    else:
        present = set(corpus.pmids)
        splits = bioasq_queries(present, restrict=True)
        unrestricted = bioasq_queries(present, restrict=False)["test"]
        # the same questions, R counting gold documents that have no snippet in the corpus
        variants = {
            "documents, in corpus": splits["test"].qrels,
            "documents, all": {q: unrestricted.qrels[q] for q in splits["test"].qids},
            "snippet PMIDs": splits["test"].alt_qrels or {},
        }
        objective = "MAP@10"
    log(
        f"{dataset}: {corpus.n_docs} docs, {corpus.n} chunks; "
        + ", ".join(f"{k} {len(v.qids)} queries" for k, v in splits.items())
    )
    lib = library_rows(path, embedder, splits["test"], variants, cache_dir / "runs")
    bench = Bench(corpus, splits)
    tuner = Tuner(bench, objective)
    best = attempts(tuner, dataset)
    check = {
        r: max(abs(lib[next(iter(variants))][r][m] - row.test[m]) for m in METRICS)
        for r, row in zip(("bm25", "dense", "hybrid"), tuner.rows[:3], strict=True)
    }
    default_dev = [tuner.dev(cfg) for cfg in DEFAULT_GRID]
    result = {
        "dataset": dataset,
        "index": str(path),
        "documents": corpus.n_docs,
        "chunks": corpus.n,
        "queries": {k: len(v.qids) for k, v in splits.items()},
        "dev_objective": objective,
        "reference": REFERENCE[dataset],
        "library": lib,
        "reimplementation_max_abs_diff_vs_library": check,
        "combined_config": best.__dict__,
        "build_seconds": build,
    }
    result["seconds"] = round(time.perf_counter() - t0, 1)
    return DatasetRun(dataset, tuner, result, default_dev)


def pick_default(runs: list[DatasetRun]) -> None:
    """Score the default candidate with the best mean dev objective (over all candidates, and
    over the RRF ones only) on every dataset's test."""
    mean_dev = np.mean([r.default_dev for r in runs], axis=0)
    over = "+".join(r.name for r in runs)
    best_all = int(np.argmax(mean_dev))
    rrf_only = [i for i, c in enumerate(DEFAULT_GRID) if c.fusion == "rrf"]
    best_rrf = rrf_only[int(np.argmax(mean_dev[rrf_only]))]
    for i, what in ((best_all, "one setting for all"), (best_rrf, "one RRF setting for all")):
        cfg = DEFAULT_GRID[i]
        label = (
            f"fusion={cfg.fusion}"
            + (f", rrf_k={cfg.rrf_k}" if cfg.fusion == "rrf" else "")
            + f", w_dense=0.5, BM25 k1={cfg.k1} b={cfg.b}"
        )
        for r in runs:
            row = r.tuner.row(
                "defaults", f"{what}, best mean dev over {over} [{label}]", cfg, r.default_dev[i]
            )
            if i == best_all:
                lib = library_fusion_check(r.tuner.bench, "test", cfg)
                r.result["default_via_library_functions"] = {
                    "config": {k: getattr(cfg, k) for k in ("fusion", "rrf_k", "k1", "b")},
                    "test": lib,
                    "max_abs_diff_vs_row": max(abs(lib[m] - row.test[m]) for m in METRICS),
                }
    for r in runs:
        r.result["default_candidates"] = [
            {
                "config": {k: getattr(c, k) for k in ("fusion", "rrf_k", "k1", "b")},
                "dev": d,
                "mean_dev": float(m),
            }
            for c, d, m in zip(DEFAULT_GRID, r.default_dev, mean_dev, strict=True)
        ]


def finish(r: DatasetRun) -> dict[str, Any]:
    r.result["attempts"] = [row.to_dict() for row in r.tuner.rows]
    r.result["dev_evaluations"] = r.tuner.evals
    return r.result


def markdown(res: dict[str, Any]) -> str:
    ds = res["dataset"]
    lines = [
        f"### {ds}: {res['documents']} docs, {res['chunks']} chunks; test "
        f"{res['queries']['test']} / dev {res['queries']['dev']} queries "
        f"(dev objective {res['dev_objective']})",
        "",
        "library `Searcher.search(level='doc')` on test, vs the issue's reference:",
        "",
        "| qrels | retriever | " + " | ".join(METRICS) + " | reference |",
        "|---|---|" + "---:|" * len(METRICS) + "---|",
    ]
    for variant, rows in res["library"].items():
        for r, m in rows.items():
            ref = ", ".join(f"{k} {v}" for k, v in res["reference"].get(r, {}).items())
            cells = " | ".join(f"{m[k]:.3f}" for k in METRICS)
            lines.append(f"| {variant} | {r} | {cells} | {ref} |")
    cols = list(res["attempts"][0]["test"])
    lines += [
        "",
        f"attempts (tuned on dev, scored on test; delta = test {res['dev_objective']} minus the "
        "library hybrid's, 95% paired-bootstrap interval):",
        "",
        "| group | attempt | dev | " + " | ".join(cols) + " | delta [95% CI] |",
        "|---|---|---:|" + "---:|" * len(cols) + "---|",
    ]
    for a in res["attempts"]:
        lo, hi = a["delta_95ci"]
        cells = " | ".join(f"{a['test'][k]:.3f}" for k in cols)
        delta = f"{a['test_objective_delta_vs_hybrid']:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        lines.append(
            f"| {a['group']} | {a['name']} | {a['dev_objective']:.3f} | {cells} | {delta} |"
        )
    diffs = res["reimplementation_max_abs_diff_vs_library"]
    lines += [
        "",
        "in-process re-implementation vs library rows (max |diff| of any metric): "
        + ", ".join(f"{k} {v:.4f}" for k, v in diffs.items())
        + f"; {res['dev_evaluations']} dev evaluations; {res['seconds']} s",
    ]
    if "default_via_library_functions" in res:
        chk = res["default_via_library_functions"]
        lines.append(
            "the 'defaults' row through BM25Index.build(k1, b) + DenseIndex + "
            "fusion.convex_score_fusion + first occurrence, query by query: max |diff| "
            f"{chk['max_abs_diff_vs_row']:.4f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--dataset", choices=("pubmedqa", "bioasq", "all"), default="all")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    ap.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    ap.add_argument(
        "--cache-dir",
        type=Path,
        default=ROOT / ".cache",
        help="index directories, embedding cache and TREC runs (default benchmarks/.cache)",
    )
    args = ap.parse_args(argv)
    for f in (PUBMEDQA, PUBMEDQA_TEST, BIOASQ_DIR):
        if not f.exists():
            ap.error(f"{f} not found (set BIORAG_SHARED_DATA to the shared data folder)")
    t0 = time.perf_counter()
    embedder = make_embedder(args.cache_dir)
    datasets = ("pubmedqa", "bioasq") if args.dataset == "all" else (args.dataset,)
    runs = [run_dataset(d, args.cache_dir, embedder) for d in datasets]
    pick_default(runs)
    results = [finish(r) for r in runs]
    out = {
        "benchmark": "retrieval_quality",
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "embed_model": embedder.model_id,
        "results": results,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    if args.out:
        from biorag.util.files import write_json_atomic

        write_json_atomic(args.out, out)
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for r in results:
            print(markdown(r) + "\n")
        print(f"total run time {out['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
