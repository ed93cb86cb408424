"""Documents one ask must not retrieve: :class:`DocExclusion`, honoured by every search.

An evaluation in the open setting must not hand a question its own source document (a PubMedQA
question's abstract holds its conclusion: the answer). :class:`DocExclusion` names such
documents by content id or source id (a PMID); :meth:`~biorag.retrieve.search.Searcher.search`
drops the hits of those documents and searches deeper so that ``k`` results remain, and counts
what it dropped. With ``drop=False`` it only counts (what reached the context without the
exclusion). A runtime given an exclusion (:meth:`biorag.runtime.Runtime.for_question`) hands its
methods an :class:`ExcludingSearcher`: every method that searches through ``rt.searcher`` obeys
it without knowing; a child of such a runtime given an exclusion of its own applies both
(:class:`CombinedExclusion`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["CombinedExclusion", "DocExclusion", "ExcludingSearcher", "Exclusion"]


class Exclusion(Protocol):
    """What a search asks of an exclusion (:class:`DocExclusion`, :class:`CombinedExclusion`)."""

    def key_of(self, doc_id: str, source_id: str) -> str | None: ...

    def drops(self, key: str) -> bool: ...

    def count(self, keys: list[str]) -> None: ...


@dataclass
class DocExclusion:
    """The documents (content ids or source ids) one ask's searches leave out (``drop``) or
    only count; ``hits`` counts the hits of these documents within the results asked for, per
    search, and ``found`` the ids they were retrieved under."""

    ids: frozenset[str]
    drop: bool = True
    hits: int = 0
    searches: int = 0
    found: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @classmethod
    def of(cls, ids: Iterable[str], drop: bool = True) -> DocExclusion:
        """An exclusion of ``ids`` (one id may be given as a string)."""
        if isinstance(ids, str):
            ids = [ids]
        return cls(frozenset(str(i) for i in ids if str(i)), drop=drop)

    def key_of(self, doc_id: str, source_id: str) -> str | None:
        """The excluded id that names this document, or None."""
        if doc_id in self.ids:
            return doc_id
        if source_id and source_id in self.ids:
            return source_id
        return None

    def drops(self, key: str) -> bool:
        """Whether the hits found by ``key`` (one of :attr:`ids`) are left out, not only
        counted."""
        return self.drop

    def count(self, keys: list[str]) -> None:
        """Record one search's hits of excluded documents (``keys``: the id each was found by)."""
        with self._lock:
            self.searches += 1
            self.hits += len(keys)
            self.found.update(keys)

    def report(self) -> dict[str, Any]:
        """What the searches of this ask met: the ids, whether dropped, the hits counted."""
        return {
            "ids": sorted(self.ids),
            "dropped": self.drop,
            "hits": self.hits,
            "found": sorted(self.found),
        }


class CombinedExclusion:
    """Exclusions applied together (a child runtime's own and the one of the runtime it was
    made from): a document is excluded where any of them names it, and left out where any that
    names it drops; each exclusion counts the hits of the documents it names.

    The key of a hit (:meth:`key_of`) holds the key each exclusion found it by (a document
    may be named by its content id in one and by its source id in another)."""

    parts: tuple[Exclusion, ...]

    def __init__(self, *parts: Exclusion) -> None:
        flat: list[Exclusion] = []
        for p in parts:
            flat.extend(p.parts if isinstance(p, CombinedExclusion) else [p])
        self.parts = tuple(flat)

    def key_of(self, doc_id: str, source_id: str) -> str | None:
        keys = [p.key_of(doc_id, source_id) for p in self.parts]
        return json.dumps(keys) if any(k is not None for k in keys) else None

    def _split(self, key: str) -> list[str | None]:
        keys: list[str | None] = json.loads(key)
        return keys

    def drops(self, key: str) -> bool:
        return any(
            k is not None and p.drops(k) for p, k in zip(self.parts, self._split(key), strict=True)
        )

    def count(self, keys: list[str]) -> None:
        split = [self._split(k) for k in keys]
        for i, p in enumerate(self.parts):
            p.count([k for ks in split if (k := ks[i]) is not None])


class ExcludingSearcher:
    """A :class:`~biorag.retrieve.search.MultiSearcher` whose searches apply one
    :class:`DocExclusion`; everything else is the searcher's own."""

    def __init__(self, inner: Any, exclusion: Exclusion) -> None:
        self.inner = inner
        self.exclusion = exclusion

    def search(
        self,
        queries: list[str],
        k: int,
        retriever: str = "hybrid",
        level: str = "chunk",
        corpora: list[str] | None = None,
    ) -> list[list[Any]]:
        return self.inner.search(
            queries, k, retriever, level, corpora=corpora, exclude=self.exclusion
        )

    def select(self, corpora: list[str] | None) -> list[Any]:
        """The searchers of ``corpora``, each applying this exclusion too."""
        return [_OneExcluding(s, self.exclusion) for s in self.inner.select(corpora)]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


class _OneExcluding:
    """One :class:`~biorag.retrieve.search.Searcher` applying a :class:`DocExclusion`."""

    def __init__(self, inner: Any, exclusion: Exclusion) -> None:
        self.inner = inner
        self.exclusion = exclusion

    def search(
        self, queries: list[str], k: int = 10, retriever: str = "hybrid", level: str = "chunk"
    ) -> list[list[Any]]:
        return self.inner.search(queries, k, retriever, level, exclude=self.exclusion)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
