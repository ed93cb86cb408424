"""Ranked triplet retrieval of VectorGraphRAG (seed 004, Sec. 3.3).

1. Search terms: the question (and, with ``use_options``, each option, as the public code does)
   lower-cased, split on whitespace, outer punctuation stripped, stop words removed (scikit-learn's
   ``ENGLISH_STOP_WORDS``, the Glasgow list closest to the spaCy list the public code used), then
   all 1-, 2- and 3-grams of the remaining words of each sentence, each term once, in order.
2. Entities: per term, the entity with the same normalized name (an exact match, similarity
   1.0) and the ``k`` = 10 entities of the :class:`~biorag.kg.entity_index.EntityIndex` most
   similar to it with cosine > ``min_entity_sim`` = 0.9.
3. Triplets: those whose subject is a matched entity (``direction="out"``, following outgoing
   edges as the public code; ``"both"`` adds those whose object is one).
4. Ranking: cosine between the embedding of the whole triplet text ("subject predicate object")
   and the question's; kept when > ``min_triplet_sim`` = 0.1; the ``top_n`` = 300 best, IN RANK
   ORDER (ties keep the store's order).

``paper_compat=True`` reproduces the public code's defects that change results:

* triplets are ranked by the embedding of "subject predicate" only (it passed (s, p, o) tuples
  to ``SentenceTransformer.encode``, which reads a tuple as a (text, text-pair) of its first two
  items), so the object is ignored;
* the ranked list is returned through a Python ``set``, which loses the rank order. A set of
  strings iterates in an order that changes with ``PYTHONHASHSEED``; to be reproducible the
  stand-in order here is ascending SHA-256 hex digest of ``"subject\\tpredicate\\tobject"``:
  arbitrary with respect to the score, the same on every run;
* the search terms are the n-grams of the question and options joined into one text (n-grams
  run across the question/option boundaries), and both cutoffs compare with ``>=``.
"""

from __future__ import annotations

import hashlib
import string
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from biorag.corpus.sentences import sentence_texts
from biorag.embed.base import l2_normalize
from biorag.kg.models import Triplet

__all__ = ["STOP_WORDS", "KGResult", "KGRetriever", "compat_order_key", "search_terms"]

STOP_WORDS: frozenset[str] = frozenset(ENGLISH_STOP_WORDS)
_STRIP = string.punctuation + "\u2018\u2019\u201c\u201d\u00ab\u00bb\u2013\u2014"


def _words(text: str) -> list[str]:
    out = []
    for w in text.lower().split():
        t = w.strip(_STRIP)
        if t and t not in STOP_WORDS and any(c.isalnum() for c in t):
            out.append(t)
    return out


def search_terms(
    question: str, options: Sequence[str] = (), *, n: int = 3, paper_compat: bool = False
) -> list[str]:
    """The 1..``n``-gram search terms of ``question`` and ``options`` (see the module docstring)."""
    if paper_compat:
        segments = sentence_texts(" ".join([question, *options]))
    else:
        segments = [*sentence_texts(question), *options]
    terms: dict[str, None] = {}
    for seg in segments:
        words = _words(seg)
        for size in range(1, n + 1):
            for i in range(len(words) - size + 1):
                terms.setdefault(" ".join(words[i : i + size]), None)
    return list(terms)


def compat_order_key(t: Triplet) -> str:
    """The deterministic stand-in for the public code's set order (see the module docstring)."""
    raw = "\t".join((t.subject.strip(), t.predicate.strip(), t.object.strip()))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@dataclass
class KGResult:
    """What retrieval found: the search terms, ``(term, entity, similarity)`` matches and the
    ``(triplet, score)`` context in the order given to the reader."""

    terms: list[str] = field(default_factory=list)
    matched_entities: list[tuple[str, str, float]] = field(default_factory=list)
    triplets: list[tuple[Triplet, float]] = field(default_factory=list)

    def context(self) -> str:
        """The triplet texts, one per line, in order."""
        return "\n".join(t.text() for t, _ in self.triplets)


class KGRetriever:
    """Search terms -> similar entities -> their triplets -> ranked by similarity to the question.

    ``store``: a :class:`~biorag.kg.stores.interfaces.KGStore`; ``entity_index``: an
    :class:`~biorag.kg.entity_index.EntityIndex` over the store's entities (synced by the
    caller); ``embedder``: the same model as the index (it embeds triplets and the question).
    """

    def __init__(
        self,
        store: Any,
        entity_index: Any,
        embedder: Any,
        *,
        k: int = 10,
        min_entity_sim: float = 0.9,
        min_triplet_sim: float = 0.1,
        top_n: int = 300,
        use_options: bool = True,
        paper_compat: bool = False,
        direction: Literal["out", "both"] = "out",
    ):
        if direction not in ("out", "both"):
            raise ValueError(f"direction must be 'out' or 'both', not {direction!r}")
        self.store = store
        self.entity_index = entity_index
        self.embedder = embedder
        self.k = int(k)
        self.min_entity_sim = float(min_entity_sim)
        self.min_triplet_sim = float(min_triplet_sim)
        self.top_n = int(top_n)
        self.use_options = bool(use_options)
        self.paper_compat = bool(paper_compat)
        self.direction = direction

    def match_entities(self, terms: Sequence[str]) -> list[tuple[str, str, float]]:
        """``(term, entity, similarity)``: exact name matches (1.0), then the similar entities."""
        hits = self.entity_index.search(
            list(terms), self.k, self.min_entity_sim, inclusive=self.paper_compat
        )
        out: list[tuple[str, str, float]] = []
        for term, near in zip(terms, hits, strict=True):
            exact = self.entity_index.lookup(term)
            if exact is not None:
                out.append((term, exact, 1.0))
            out.extend((term, name, sim) for name, sim in near if name != exact)
        return out

    def rank(self, question: str, triplets: Sequence[Triplet]) -> list[tuple[Triplet, float]]:
        """Triplets scored by cosine to ``question``, above the cutoff, best first, ``top_n``."""
        if not triplets or self.top_n <= 0:
            return []
        if self.paper_compat:
            texts = [f"{t.subject.strip()} {t.predicate.strip()}" for t in triplets]
        else:
            texts = [t.text() for t in triplets]
        vecs = l2_normalize(self.embedder.embed(texts))
        q = l2_normalize(self.embedder.embed([" ".join(question.split())]))[0]
        scores = vecs @ q
        keep = (
            scores >= self.min_triplet_sim if self.paper_compat else scores > self.min_triplet_sim
        )
        order = [int(i) for i in np.argsort(-scores, kind="stable") if keep[i]][: self.top_n]
        ranked = [(triplets[i], float(scores[i])) for i in order]
        if self.paper_compat:
            ranked.sort(key=lambda ts: compat_order_key(ts[0]))
        return ranked

    def retrieve(self, question: str, options: Sequence[str] = ()) -> KGResult:
        """The ranked triplet context of ``question`` (and its option texts)."""
        opts = list(options) if self.use_options else []
        terms = search_terms(question, opts, paper_compat=self.paper_compat)
        matched = self.match_entities(terms) if terms else []
        names = list(dict.fromkeys(e for _, e, _ in matched))
        found = self.store.triplets_for_entities(names, self.direction) if names else []
        unique: dict[tuple[str, str, str], Triplet] = {}
        for t in found:
            unique.setdefault(t.key(), t)
        return KGResult(terms, matched, self.rank(question, list(unique.values())))
