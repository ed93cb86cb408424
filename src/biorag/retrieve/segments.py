"""An index directory's search structures as segments: each a batch of chunks with its BM25
postings and its FAISS index, so adding costs what is added and removing marks rows deleted.

Layout::

    DIR/segments.json            the committed list: segments, their deleted rows, indexed_seq
    DIR/segments/<name>/         bm25_*.npy + bm25_terms.json (TermSegment), dense/ (DenseIndex)

A segment's rows are chunks in storage order; ``indexed_seq`` is the last stored chunk the
segments hold. ``segments.json`` is replaced atomically after a segment directory is complete,
so a killed update leaves the previous state (and a directory the next update deletes).
Searching reads every segment: BM25 with the statistics of all live rows
(:class:`~biorag.retrieve.bm25_terms.BM25Scorer`), dense through each segment's FAISS index with
its deleted rows excluded; hits are merged by score, ties by storage order. Writing is
:mod:`biorag.retrieve.segment_writer`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from biorag.errors import REBUILD_INDEX as REBUILD
from biorag.errors import DamagedFileError, IndexMismatchError, reading
from biorag.retrieve.bm25 import BM25Index, Tokenizer
from biorag.retrieve.bm25_terms import BM25Scorer, TermSegment
from biorag.retrieve.dense import DenseIndex
from biorag.retrieve.hits import Hit

FORMAT = "biorag-segments/1"
STATE = "segments.json"
SEGMENTS_DIR = "segments"


def read_state(path: Path) -> dict[str, Any] | None:
    """The committed ``segments.json`` of index ``path``, or None when it has none."""
    spath = Path(path) / STATE
    if not spath.is_file():
        return None
    with reading(spath, "the index's segment list", REBUILD):
        state = json.loads(spath.read_text(encoding="utf-8"))
    if state.get("format") != FORMAT:
        raise IndexMismatchError(
            f"{spath} has format {state.get('format')!r}, expected {FORMAT!r}; rebuild the index"
        )
    return state


def deleted_mask(n: int, rows: list[int]) -> np.ndarray | None:
    """A boolean mask of ``n`` rows marking ``rows``, or None when there are none."""
    if not rows:
        return None
    mask = np.zeros(n, dtype=bool)
    mask[np.asarray(rows, dtype=np.int64)] = True
    return mask


@dataclass
class Segment:
    """One loaded segment: its postings, its vectors, and which of its rows are deleted."""

    name: str
    terms: TermSegment
    dense: DenseIndex
    deleted: np.ndarray | None

    @property
    def ids(self) -> list[str]:
        return self.dense.ids

    @property
    def n_live(self) -> int:
        return self.terms.n - (0 if self.deleted is None else int(self.deleted.sum()))

    @classmethod
    def load(cls, directory: Path, info: dict[str, Any], dim: int | None = None) -> Segment:
        terms = TermSegment.load(directory)
        dense = DenseIndex.load(directory / "dense", expected_dim=dim)
        if dense.n_docs != terms.n or info["rows"] != terms.n:
            raise IndexMismatchError(
                f"segment {directory}: {terms.n} BM25 rows, {dense.n_docs} vectors, "
                f"{info['rows']} listed; rebuild the index"
            )
        return cls(info["name"], terms, dense, deleted_mask(terms.n, info.get("deleted", [])))


def load_segments(path: Path, state: dict[str, Any], dim: int | None) -> list[Segment]:
    return [
        Segment.load(Path(path) / SEGMENTS_DIR / info["name"], info, dim)
        for info in state["segments"]
    ]


def _top(scores: np.ndarray, pos: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` best candidates as ``(scores, positions)``: highest score first, ties by
    position (storage order)."""
    if scores.size > k:
        part = np.argpartition(-scores, k - 1)[:k]
        # keep every candidate tied with the k-th so ties resolve by storage order
        part = np.flatnonzero(scores >= scores[part].min())
        scores, pos = scores[part], pos[part]
    order = np.lexsort((pos, -scores))[:k]
    return scores[order], pos[order]


class Positions:
    """Global row positions (segments in order) and the chunk id at each (one per searcher:
    its BM25 and dense halves share it)."""

    def __init__(self, segments: list[Segment]):
        self.offsets = np.cumsum([0] + [s.terms.n for s in segments])
        self._ids = [np.asarray(s.ids, dtype=object) for s in segments]

    def hits(self, scores: np.ndarray, pos: np.ndarray) -> list[Hit]:
        seg = np.searchsorted(self.offsets, pos, side="right") - 1
        return [
            Hit(id=str(self._ids[g][p - self.offsets[g]]), score=float(sc), rank=r)
            for r, (sc, p, g) in enumerate(zip(scores, pos, seg, strict=True), start=1)
        ]


class SegmentedBM25:
    """BM25 search over segments, with the interface of
    :class:`~biorag.retrieve.bm25.BM25Index`."""

    def __init__(
        self, segments: list[Segment], k1: float, b: float, where: Positions | None = None
    ):
        self.segments = segments
        self._tokenizer = Tokenizer()
        self._scorer = BM25Scorer([(s.terms, s.deleted) for s in segments], k1, b)
        self._where = where or Positions(segments)

    @property
    def n_docs(self) -> int:
        return self._scorer.n_live

    def tokenize(self, text: str) -> list[str]:
        return self._tokenizer(text)

    def _search_one(self, query: str, k: int) -> list[Hit]:
        return self._top(self._tokenizer(query), None, k)

    def search_weighted(self, weights: dict[str, float], k: int) -> list[Hit]:
        """Top ``k`` live hits of a query given as term weights (RM3's expanded query)."""
        return self._top([], weights, k)

    def _top(self, tokens: list[str], weights: dict[str, float] | None, k: int) -> list[Hit]:
        if k <= 0 or not (tokens or weights):
            return []
        found = self._scorer.scores(tokens, weights)
        scores = np.concatenate([sc for _, sc in found]) if found else np.zeros(0)
        if not scores.size:
            return []
        offsets = self._where.offsets[:-1]
        pos = np.concatenate([rows + off for (rows, _), off in zip(found, offsets, strict=True)])
        return self._where.hits(*_top(scores, pos, k))

    def search(self, queries: list[str], k: int, n_threads: int = 1) -> list[list[Hit]]:
        """Top ``k`` live hits for each query (none for a query with no indexed term)."""
        if n_threads > 1 and len(queries) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=n_threads) as pool:
                return list(pool.map(lambda q: self._search_one(q, k), queries))
        return [self._search_one(q, k) for q in queries]


class SegmentedDense:
    """Dense search over segments, with the interface of
    :class:`~biorag.retrieve.dense.DenseIndex`."""

    def __init__(self, segments: list[Segment], dim: int, where: Positions | None = None):
        self.segments = segments
        self.dim = dim
        self._excluded = [
            None if s.deleted is None else np.flatnonzero(s.deleted) for s in segments
        ]
        self._where = where or Positions(segments)

    @property
    def n_docs(self) -> int:
        return sum(s.n_live for s in self.segments)

    def search(self, query_vectors: np.ndarray, k: int) -> list[list[Hit]]:
        """Top ``k`` live hits for each query vector; ties by storage order."""
        q = np.asarray(query_vectors, dtype=np.float32)
        q = q[None, :] if q.ndim == 1 else q
        found = [
            s.dense.search_rows(q, k, exclude=ex)
            for s, ex in zip(self.segments, self._excluded, strict=True)
        ]
        offsets = self._where.offsets[:-1]
        out: list[list[Hit]] = []
        for qi in range(q.shape[0]):
            scores, pos = [], []
            for (sc, rows), off in zip(found, offsets, strict=True):
                r = rows[qi][rows[qi] >= 0]
                scores.append(sc[qi][: r.size])
                pos.append(r + off)
            if not sum(x.size for x in scores):
                out.append([])
                continue
            out.append(self._where.hits(*_top(np.concatenate(scores), np.concatenate(pos), k)))
        return out


def open_local(path: Path, dim: int, settings: Any) -> tuple[Any, Any]:
    """The BM25 and dense search of an index kept on disk: its segments, or the one BM25 and
    one FAISS index of an index built before segments (until its next add or removal)."""

    state = read_state(path)
    if state is None and (path / "bm25").is_dir():
        return BM25Index.load(path / "bm25"), DenseIndex.load(path / "dense", expected_dim=dim)
    if state is None:
        raise IndexMismatchError(
            f"index {path} has no search segments ({path / 'segments.json'}): its build was "
            "cut short; run biorag index build on it again to finish"
        )
    for attempt in range(3):
        try:
            segments = load_segments(path, state, dim)
            break
        except (DamagedFileError, IndexMismatchError):
            # an add or a removal may have replaced the segments while they were read
            newer = read_state(path)
            if attempt == 2 or newer == state or newer is None:
                raise
            state = newer
    where = Positions(segments)
    return (
        SegmentedBM25(segments, settings.bm25_k1, settings.bm25_b, where),
        SegmentedDense(segments, dim, where),
    )
