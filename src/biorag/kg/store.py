"""The knowledge-graph store interface and its factory.

Two backends implement :class:`KGStore`:

* ``"sqlite"`` (default, embedded, no server): :class:`~biorag.kg.sqlite_store.SQLiteKGStore`,
  one file ``DIR/kg.sqlite``.
* ``"neo4j"``: :class:`~biorag.kg.neo4j_store.Neo4jKGStore`, the graph database of the
  VectorGraphRAG paper, through the official driver (``pip install 'biorag[neo4j]'``).

Both keep one node per entity key (see :func:`~biorag.kg.models.normalize_key`) and one edge
per normalized ``(subject, predicate, object)``; a duplicate is counted, not stored again, and the
provenance of the first copy is kept. Every listing is in insertion order.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, NamedTuple, Protocol, runtime_checkable

from biorag.errors import BioragError
from biorag.kg.models import AddReport, Triplet, normalize_key

Direction = Literal["out", "both"]


@runtime_checkable
class KGStore(Protocol):
    """A store of entities and the triplets between them."""

    def add_triplets(self, triplets: Iterable[Triplet]) -> AddReport:
        """Store the valid new triplets (and their entities); count duplicates; report invalid."""
        ...

    def entities(self) -> list[str]:
        """Every entity name, in insertion order."""
        ...

    def has_entity(self, name: str) -> bool:
        """Whether an entity with the normalized key of ``name`` is stored."""
        ...

    def triplets_for_entities(
        self, names: Iterable[str], direction: Direction = "out"
    ) -> list[Triplet]:
        """Triplets whose subject (``"out"``) or subject or object (``"both"``) is in ``names``.

        Names are matched by normalized key; the result is in insertion order, each once.
        """
        ...

    def iter_triplets(self) -> Iterator[Triplet]:
        """Every triplet, in insertion order."""
        ...

    def count_triplets(self) -> int: ...

    def count_entities(self) -> int: ...

    def close(self) -> None: ...


class PreparedTriplet(NamedTuple):
    """A valid triplet with stripped names and normalized keys, ready for a backend."""

    subject: str
    subject_key: str
    predicate: str
    predicate_key: str
    object: str
    object_key: str
    source_id: str
    model: str


def prepare_triplets(
    triplets: Iterable[Triplet], report: AddReport, start: int = 0
) -> Iterator[tuple[int, PreparedTriplet]]:
    """Yield ``(index, prepared)`` for the valid triplets; record the invalid ones in ``report``.

    Indexes count from ``start``. Anything that is not a :class:`Triplet` is reported as invalid.
    """
    for i, t in enumerate(triplets, start):
        if not isinstance(t, Triplet):
            report.invalid.append((i, f"not a Triplet: {type(t).__name__}"))
            continue
        s, p, o = t.subject.strip(), t.predicate.strip(), t.object.strip()
        if not (s and p and o):
            report.invalid.append((i, t.problem()))
            continue
        yield (
            i,
            PreparedTriplet(
                s, normalize_key(s), p, normalize_key(p), o, normalize_key(o), t.source_id, t.model
            ),
        )


def unique_keys(names: Iterable[str]) -> list[str]:
    """The distinct non-empty normalized keys of ``names``, in first-seen order."""
    keys = (normalize_key(n) for n in names if isinstance(n, str))
    return list(dict.fromkeys(k for k in keys if k))


def open_store(
    path: str | Path, backend: Literal["sqlite", "neo4j"] = "sqlite", **kw: Any
) -> KGStore:
    """Open (creating if needed) a knowledge-graph store.

    ``sqlite``: ``path`` is a directory (the file is ``path/kg.sqlite``) or a ``*.sqlite`` /
    ``*.db`` file. ``neo4j``: ``path`` is the server URI (``bolt://`` / ``neo4j://``); keyword
    arguments ``user``, ``password_env`` (the NAME of the variable holding the password,
    ``BIORAG_NEO4J_PASSWORD`` by default), ``database`` and ``batch_size`` are passed on.
    """
    if backend == "sqlite":
        from biorag.kg.sqlite_store import SQLiteKGStore

        return SQLiteKGStore(path, **kw)
    if backend == "neo4j":
        from biorag.kg.neo4j_store import Neo4jKGStore

        return Neo4jKGStore(str(path), **kw)
    raise BioragError(f"unknown knowledge-graph backend {backend!r}: use 'sqlite' or 'neo4j'")
