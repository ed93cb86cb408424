"""A BM25 index (``bm25s``, numpy backend) over English-stemmed, stop-word-free tokens.

Documents and queries go through the same tokenizer: lower-cased ``\\w\\w+`` words, English stop
words removed (NLTK's list), Snowball English stems (PyStemmer). Scores are bm25s' "lucene"
BM25 (k1=1.5, b=0.75). Only documents sharing a term with the query are returned.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from biorag.errors import REBUILD_INDEX as REBUILD
from biorag.errors import IndexMismatchError, reading
from biorag.retrieve.hits import Hit
from biorag.util.files import write_dir_atomically
from biorag.util.progress import progress

FORMAT = "biorag-bm25/1"
_TOKEN = re.compile(r"(?u)\b\w\w+\b")

# NLTK's English stop-word list (the apostrophe-free forms; the tokenizer drops 1-letter words).
ENGLISH_STOP_WORDS: frozenset[str] = frozenset(
    """i me my myself we our ours ourselves you your yours yourself yourselves he him his himself
    she her hers herself it its itself they them their theirs themselves what which who whom this
    that these those am is are was were be been being have has had having do does did doing a an
    the and but if or because as until while of at by for with about against between into through
    during before after above below to from up down in out on off over under again further then
    once here there when where why how all any both each few more most other some such no nor not
    only own same so than too very can will just don should now ll re ve ain aren couldn didn
    doesn hadn hasn haven isn ma mightn mustn needn shan shouldn wasn weren won wouldn""".split()
)


class Tokenizer:
    """Lower-case, split on ``\\w\\w+``, drop stop words, stem (Snowball English); stems cached."""

    def __init__(self, language: str = "english", stop_words: frozenset[str] = ENGLISH_STOP_WORDS):
        import Stemmer

        self.language = language
        self.stop_words = stop_words
        self._stem_word = Stemmer.Stemmer(language).stemWord
        self._cache: dict[str, str | None] = {w: None for w in stop_words}

    def __call__(self, text: str) -> list[str]:
        """The stemmed, stop-word-free tokens of ``text`` in order (repeats kept)."""
        cache = self._cache
        out: list[str] = []
        for word in _TOKEN.findall(text.lower()):
            stem = cache.get(word, "")
            if stem == "":
                stem = cache[word] = self._stem_word(word)
            if stem is not None:
                out.append(stem)
        return out


class BM25Index:
    """Lexical retrieval over a fixed set of documents, identified by string ids.

    Build with :meth:`build`, open with :meth:`load`; :meth:`search` answers many queries.
    """

    def __init__(self, retriever: Any, ids: list[str], tokenizer: Tokenizer | None = None):
        self._retriever = retriever
        self.ids = list(ids)
        self._ids_arr = np.asarray(self.ids, dtype=object)
        self._tokenizer = tokenizer or Tokenizer()
        self._vocab: dict[str, int] = retriever.vocab_dict

    @property
    def n_docs(self) -> int:
        """Number of indexed documents."""
        return len(self.ids)

    @classmethod
    def build(
        cls,
        ids: Sequence[str],
        texts: Sequence[str],
        show_progress: bool = False,
        *,
        k1: float = 1.5,
        b: float = 0.75,
    ) -> BM25Index:
        """Tokenize ``texts`` and build the index; ``ids[i]`` names ``texts[i]``."""
        import bm25s

        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        if len(set(ids)) != len(ids):
            raise ValueError("document ids must be unique")
        tok = Tokenizer()
        vocab: dict[str, int] = {}
        corpus_ids: list[list[int]] = []
        texts_iter: Any = texts
        if show_progress:
            texts_iter = progress(texts, "BM25 tokenize", unit="doc")
        for text in texts_iter:
            row = []
            for stem in tok(text):
                sid = vocab.get(stem)
                if sid is None:
                    sid = vocab[stem] = len(vocab)
                row.append(sid)
            corpus_ids.append(row)
        if not corpus_ids:
            # bm25s cannot index nothing; one placeholder row keeps an empty index valid (with no
            # ids, every search returns no hit).
            vocab, corpus_ids = {"\x00": 0}, [[0]]
        retriever = bm25s.BM25(k1=k1, b=b, backend="numpy")
        retriever.index(
            bm25s.tokenization.Tokenized(ids=corpus_ids, vocab=vocab),
            show_progress=show_progress,
        )
        return cls(retriever, list(ids), tok)

    def _query_token_ids(self, query: str) -> np.ndarray:
        ids = [self._vocab[t] for t in self._tokenizer(query) if t in self._vocab]
        return np.asarray(ids, dtype=np.int64)

    def _search_one(self, query: str, k: int) -> list[Hit]:
        token_ids = self._query_token_ids(query)
        if token_ids.size == 0 or k <= 0 or not self.ids:
            return []
        scores = self._retriever.get_scores_from_ids(token_ids)
        nonzero = np.flatnonzero(scores > 0)
        if nonzero.size == 0:
            return []
        cand_scores = scores[nonzero]
        if nonzero.size > k:
            part = np.argpartition(-cand_scores, k - 1)[:k]
            nonzero, cand_scores = nonzero[part], cand_scores[part]
        # Best score first; ties by document position (stable, deterministic).
        order = np.lexsort((nonzero, -cand_scores))
        docs = self._ids_arr[nonzero[order]]
        return [
            Hit(id=str(d), score=float(s), rank=r)
            for r, (d, s) in enumerate(zip(docs, cand_scores[order], strict=True), start=1)
        ]

    def search(self, queries: Sequence[str], k: int, n_threads: int = 1) -> list[list[Hit]]:
        """Top ``k`` hits for each query (fewer when fewer documents match; none for a query
        that is empty or made only of stop words / unknown words). ``n_threads > 1`` scores
        queries in a thread pool (numpy releases the GIL for much of the work)."""
        if n_threads > 1 and len(queries) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=n_threads) as pool:
                return list(pool.map(lambda q: self._search_one(q, k), queries))
        return [self._search_one(q, k) for q in queries]

    def save(self, directory: str | Path) -> Path:
        """Write the index (bm25s arrays, vocabulary, ids) to ``directory``, replacing it
        atomically."""

        def write(tmp: Path) -> None:
            self._retriever.save(str(tmp), show_progress=False)
            (tmp / "ids.json").write_text(json.dumps(self.ids), encoding="utf-8")
            meta = {
                "format": FORMAT,
                "n_docs": self.n_docs,
                "stemmer": self._tokenizer.language,
                "stop_words": sorted(self._tokenizer.stop_words),
            }
            (tmp / "biorag_bm25.json").write_text(json.dumps(meta), encoding="utf-8")

        return write_dir_atomically(directory, write)

    @classmethod
    def load(cls, directory: str | Path, *, mmap: bool = False) -> BM25Index:
        """Open an index written by :meth:`save` (``mmap`` maps the arrays instead of reading)."""
        import bm25s

        directory = Path(directory)
        meta_path = directory / "biorag_bm25.json"
        if not meta_path.is_file():
            raise IndexMismatchError(
                f"{directory} is not a biorag BM25 index (no {meta_path.name})"
            )
        with reading(meta_path, "the BM25 index's description", REBUILD):
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise IndexMismatchError(
                f"{directory} holds BM25 index format {meta.get('format')!r}, expected {FORMAT!r}; "
                "rebuild the index"
            )
        with reading(directory, "the BM25 index's arrays and vocabulary", REBUILD):
            retriever = bm25s.BM25.load(str(directory), mmap=mmap, show_progress=False)
        with reading(directory / "ids.json", "the BM25 index's document ids", REBUILD):
            ids = json.loads((directory / "ids.json").read_text(encoding="utf-8"))
        with reading(meta_path, "the BM25 index's description", REBUILD):
            tok = Tokenizer(meta["stemmer"], frozenset(meta["stop_words"]))
        return cls(retriever, ids, tok)
