"""BM25 over segments of term frequencies, scored at query time from the live collection.

A :class:`TermSegment` holds the postings of one batch of chunks: for every term, the chunks
that contain it and how often (a SciPy CSR matrix, terms x chunks), plus each chunk's length.
Nothing in it depends on the rest of the collection, so an index grows by writing a segment for
what was added, and a chunk is removed by marking its row deleted.

:class:`BM25Scorer` scores a query over several segments with the statistics of all their live
rows (N, document frequencies, average length), so the scores equal those of one index built
from the live chunks alone: bm25s's "lucene" variant, which :class:`~biorag.retrieve.bm25.BM25Index`
uses, ``idf = ln(1 + (N - df + 0.5) / (df + 0.5))`` times ``tf / (tf + k1 (1 - b + b dl/avgdl))``,
summed over the query's tokens (a repeated token counts again).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from biorag.errors import REBUILD_INDEX as REBUILD
from biorag.errors import IndexMismatchError, reading
from biorag.retrieve.bm25 import Tokenizer

FORMAT = "biorag-bm25-terms/1"


class TermSegment:
    """Postings of one batch of chunks: ``indptr``/``rows``/``tfs`` per term, ``lengths``
    per row."""

    def __init__(
        self,
        terms: list[str],
        indptr: np.ndarray,
        rows: np.ndarray,
        tfs: np.ndarray,
        lengths: np.ndarray,
    ):
        self.terms = terms
        self.vocab = {t: i for i, t in enumerate(terms)}
        self.indptr = indptr
        self.rows = rows
        self.tfs = tfs
        self.lengths = lengths

    @property
    def n(self) -> int:
        """Rows (chunks) in the segment, deleted ones included."""
        return int(self.lengths.shape[0])

    @classmethod
    def build(cls, texts: Sequence[str], tokenizer: Tokenizer | None = None) -> TermSegment:
        """Tokenize ``texts`` (row i is ``texts[i]``) and count their terms."""
        tok = tokenizer or Tokenizer()
        vocab: dict[str, int] = {}
        term_ids: list[int] = []
        lengths = np.zeros(len(texts), dtype=np.int32)
        for i, text in enumerate(texts):
            stems = tok(text)
            lengths[i] = len(stems)
            for stem in stems:
                tid = vocab.get(stem)
                if tid is None:
                    tid = vocab[stem] = len(vocab)
                term_ids.append(tid)
        doc_rows = np.repeat(np.arange(len(texts), dtype=np.int32), lengths)
        return cls._from_pairs(list(vocab), np.asarray(term_ids, np.int64), doc_rows, None, lengths)

    @classmethod
    def _from_pairs(
        cls,
        terms: list[str],
        term_ids: np.ndarray,
        doc_rows: np.ndarray,
        counts: np.ndarray | None,
        lengths: np.ndarray,
    ) -> TermSegment:
        """Postings from (term, row[, count]) pairs; repeated pairs are summed."""
        import scipy.sparse as sp

        data = np.ones(len(term_ids), np.int32) if counts is None else counts.astype(np.int32)
        m = sp.csr_matrix((data, (term_ids, doc_rows)), shape=(len(terms), int(lengths.shape[0])))
        m.sum_duplicates()
        m.sort_indices()
        return cls(
            terms,
            m.indptr.astype(np.int64),
            m.indices.astype(np.int32),
            m.data.astype(np.int32),
            lengths.astype(np.int32),
        )

    def _pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """(term id, row) of every posting, in posting order."""
        counts = np.diff(self.indptr)
        return np.repeat(np.arange(len(self.terms), dtype=np.int64), counts), self.rows

    @classmethod
    def merge(cls, parts: Sequence[tuple[TermSegment, np.ndarray | None]]) -> TermSegment:
        """One segment of ``parts`` in order, each keeping the rows its mask marks (all when
        the mask is None); rows are renumbered, terms unioned."""
        terms: list[str] = []
        vocab: dict[str, int] = {}
        all_terms, all_rows, all_tfs, all_lengths = [], [], [], []
        offset = 0
        for seg, keep in parts:
            remap = np.empty(len(seg.terms), dtype=np.int64)
            for i, t in enumerate(seg.terms):
                j = vocab.get(t)
                if j is None:
                    j = vocab[t] = len(terms)
                    terms.append(t)
                remap[i] = j
            tids, rows = seg._pairs()
            tfs, lengths = seg.tfs, seg.lengths
            if keep is not None:
                new_row = np.cumsum(keep) - 1
                live = keep[rows]
                tids, rows, tfs = tids[live], new_row[rows[live]], tfs[live]
                lengths = lengths[keep]
            all_terms.append(remap[tids])
            all_rows.append(rows.astype(np.int64) + offset)
            all_tfs.append(tfs)
            all_lengths.append(lengths)
            offset += int(lengths.shape[0])

        def cat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
            return np.concatenate(arrays) if arrays else np.zeros(0, dtype)

        return cls._from_pairs(
            terms,
            cat(all_terms, np.int64),
            cat(all_rows, np.int64),
            cat(all_tfs, np.int32),
            cat(all_lengths, np.int32),
        )

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(rows, term frequencies) of ``term``; empty when the segment lacks it."""
        j = self.vocab.get(term)
        if j is None:
            return self.rows[:0], self.tfs[:0]
        a, b = self.indptr[j], self.indptr[j + 1]
        return self.rows[a:b], self.tfs[a:b]

    def save(self, directory: Path) -> None:
        """Write the arrays and terms into ``directory`` (an existing, new directory)."""
        for name in ("indptr", "rows", "tfs", "lengths"):
            np.save(directory / f"bm25_{name}.npy", getattr(self, name))
        (directory / "bm25_terms.json").write_text(
            json.dumps({"format": FORMAT, "terms": self.terms}), encoding="utf-8"
        )

    @classmethod
    def load(cls, directory: Path) -> TermSegment:
        path = directory / "bm25_terms.json"
        with reading(path, "a BM25 segment's terms", REBUILD):
            meta = json.loads(path.read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise IndexMismatchError(
                f"{directory} holds BM25 segment format {meta.get('format')!r}, expected "
                f"{FORMAT!r}; rebuild the index"
            )
        arrays = []
        for name in ("indptr", "rows", "tfs", "lengths"):
            path = directory / f"bm25_{name}.npy"
            with reading(path, f"a BM25 segment's {name}", REBUILD):
                arrays.append(np.load(path))
        indptr, rows, tfs, lengths = arrays
        with reading(directory, "a BM25 segment's postings", REBUILD):
            if not (
                indptr.shape[0] == len(meta["terms"]) + 1
                and int(indptr[-1]) == rows.shape[0] == tfs.shape[0]
                and (not rows.size or int(rows.max()) < lengths.shape[0])
            ):
                raise ValueError("its postings, terms and lengths disagree in size")
        return cls(meta["terms"], indptr, rows, tfs, lengths)


class BM25Scorer:
    """Scores queries over segments with the statistics of all their live rows.

    ``parts`` pairs each segment with its deleted-rows mask (None: nothing deleted); N, the
    average length and every row's length norm are computed once, document frequencies per
    query from the live postings."""

    def __init__(self, parts: Sequence[tuple[TermSegment, np.ndarray | None]], k1: float, b: float):
        self.parts = list(parts)
        n_live, total_len = 0, 0
        for seg, deleted in self.parts:
            lengths = seg.lengths if deleted is None else seg.lengths[~deleted]
            n_live += int(lengths.shape[0])
            total_len += int(lengths.sum(dtype=np.int64))
        self.n_live = n_live
        avgdl = total_len / n_live if n_live else 1.0
        self.norms = [k1 * ((1.0 - b) + b * seg.lengths / avgdl) for seg, _ in self.parts]

    def scores(
        self, tokens: Sequence[str], weights: dict[str, float] | None = None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """For each segment, ``(rows, scores)`` of its live rows sharing a term with the query;
        ``weights`` (term -> weight, as RM3 gives) replace the tokens' counts when given."""
        empty: list[tuple[np.ndarray, np.ndarray]] = [
            (np.zeros(0, np.int32), np.zeros(0)) for _ in self.parts
        ]
        if not self.n_live or not (tokens or weights):
            return empty
        uniq: dict[str, float] = {}
        if weights is not None:
            uniq = {t: float(w) for t, w in weights.items() if w > 0}
        else:
            for t in tokens:
                uniq[t] = uniq.get(t, 0) + 1
        # pass 1: live postings and document frequencies
        found: list[list[tuple[str, np.ndarray, np.ndarray]]] = []
        df: dict[str, int] = dict.fromkeys(uniq, 0)
        for seg, deleted in self.parts:
            per_seg = []
            for t in uniq:
                rows, tfs = seg.postings(t)
                if deleted is not None and rows.size:
                    live = ~deleted[rows]
                    rows, tfs = rows[live], tfs[live]
                if rows.size:
                    per_seg.append((t, rows, tfs))
                    df[t] += int(rows.size)
            found.append(per_seg)
        n = self.n_live
        idf = {t: np.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items()}
        # pass 2: scores per segment
        out: list[tuple[np.ndarray, np.ndarray]] = []
        for (seg, _), norm, per_seg in zip(self.parts, self.norms, found, strict=True):
            if not per_seg:
                out.append(empty[0])
                continue
            rows = np.concatenate([r for _, r, _ in per_seg])
            tf = np.concatenate([f for _, _, f in per_seg]).astype(np.float64)
            weight = np.concatenate([np.full(r.size, uniq[t] * idf[t]) for t, r, _ in per_seg])
            if len(per_seg) == 1:  # one term: each row appears once
                out.append((rows, weight * tf / (tf + norm[rows])))
                continue
            summed = np.bincount(rows, weights=weight * tf / (tf + norm[rows]), minlength=seg.n)
            hit = np.flatnonzero(summed > 0)
            out.append((hit.astype(np.int32), summed[hit]))
        return out
