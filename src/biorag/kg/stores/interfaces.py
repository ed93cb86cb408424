"""The two store interfaces of the knowledge graph and the helpers their backends share.

Flat triplets (VectorGraphRAG): :class:`KGStore`. Both backends keep one node per entity key
(see :func:`~biorag.kg.models.normalize_key`) and one edge per normalized ``(subject, predicate,
object)``; a duplicate is counted, not stored again, and the provenance of the first copy is
kept. Every listing is in insertion order.

Typed graph (BioStrataKG): :class:`TypedGraphStore`. A typed graph has typed nodes, unique by
``(type, key)`` (the same surface form under two types is two nodes), and typed, directed
multi-edges with provenance: one edge per ``(src, dst, type, source_pid)``, so the same relation
stated by three papers is three edges and merging duplicates never loses a paper. Every node
also has aliases (lower-cased surface forms and vocabulary synonyms) that
:meth:`TypedGraphStore.find_nodes` resolves. Node ids are opaque: callers may only compare and
hash them. Node and edge types must match :data:`TYPE_PATTERN` (they become Neo4j labels, which
cannot be query parameters).

The backends (:mod:`biorag.kg.stores.flat_sqlite`, :mod:`~biorag.kg.stores.flat_neo4j`,
:mod:`~biorag.kg.stores.typed_sqlite`, :mod:`~biorag.kg.stores.typed_neo4j`) import this module;
:mod:`biorag.kg.stores.factory` imports them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Hashable, Iterable, Iterator
from typing import Any, Literal, NamedTuple, Protocol, Self, TypeAlias, runtime_checkable

from biorag.errors import BioragError
from biorag.kg.models import AddReport, Triplet, normalize_key

Direction = Literal["out", "both"]
NodeId: TypeAlias = Hashable
Backend: TypeAlias = Literal["sqlite", "neo4j"]
TYPE_PATTERN = re.compile(r"^[A-Z][A-Za-z0-9_]*$")


# -- flat triplets -------------------------------------------------------------------------
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


def lookup_keys(names: Iterable[str], direction: str) -> list[str]:
    """The keys :meth:`KGStore.triplets_for_entities` looks up: :func:`unique_keys` of
    ``names``, once ``direction`` is checked (a ValueError unless ``"out"`` or ``"both"``)."""
    if direction not in ("out", "both"):
        raise ValueError(f"direction must be 'out' or 'both', not {direction!r}")
    return unique_keys(names)


# -- typed graph ---------------------------------------------------------------------------
def node_key(name: str) -> str:
    """The merge key of an unnormalized name: lower-cased, whitespace collapsed."""
    return " ".join(name.lower().split())


def check_type(type_: str, what: str = "node type") -> str:
    """``type_`` when it is a safe label (``^[A-Z][A-Za-z0-9_]*$``), else a BioragError."""
    if not isinstance(type_, str) or not TYPE_PATTERN.match(type_):
        raise BioragError(
            f"{what} {type_!r} is not a valid label: use a capitalised name of letters, digits "
            "and '_' (e.g. 'Gene', 'TREATS')"
        )
    return type_


def unique_aliases(aliases: Iterable[str]) -> list[str]:
    """The distinct non-empty :func:`node_key` forms of ``aliases``, in first-seen order."""
    keys = (node_key(a) for a in aliases if isinstance(a, str))
    return list(dict.fromkeys(k for k in keys if k))


class StoredNode(NamedTuple):
    """What :meth:`TypedGraphStore.upsert_node` needs of a node that was already there."""

    attrs: str | None  # the attributes as stored: a JSON object
    vocab_id: str | None


@runtime_checkable
class TypedGraphStore(Protocol):
    """Typed nodes and typed directed multi-edges with provenance and aliases.

    A node is returned as ``{"id", "type", "name", "key", "vocab_id", "attrs"}`` (``attrs`` a
    dict), an edge as ``{"src", "dst", "type", "source_pid"}``; listings are in insertion order.

    The backends subclass this protocol and inherit :meth:`upsert_node` (the merge rule), which
    writes through their :meth:`_merge_node` and :meth:`_update_node`.
    """

    def upsert_node(
        self,
        type_: str,
        key: str,
        name: str,
        vocab_id: str | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> NodeId:
        """The id of node ``(type_, key)``, created when new (with ``name``).

        On an existing node the first name is kept, ``attrs`` are merged into its attributes
        (new values win) and ``vocab_id`` is set only when it had none.
        """
        node_id, old = self._merge_node(
            check_type(type_), key, name, vocab_id, json.dumps(attrs or {})
        )
        if old is not None and (attrs or (vocab_id and not old.vocab_id)):
            merged = {**json.loads(old.attrs or "{}"), **(attrs or {})}
            self._update_node(node_id, json.dumps(merged), vocab_id)
        return node_id

    def _merge_node(
        self, type_: str, key: str, name: str, vocab_id: str | None, attrs: str
    ) -> tuple[NodeId, StoredNode | None]:
        """Create node ``(type_, key)`` (``type_`` checked, ``attrs`` a JSON object) unless it
        exists; its id and, for one that existed, what it holds (None when created)."""
        ...

    def _update_node(self, node_id: NodeId, attrs: str, vocab_id: str | None) -> None:
        """Replace the node's attributes by ``attrs`` (JSON); set ``vocab_id`` where it has none."""
        ...

    def add_aliases(self, node_id: NodeId, aliases: Iterable[str]) -> None:
        """Add the :func:`node_key` forms of ``aliases`` to the node (duplicates ignored)."""
        ...

    def add_edge(self, src: NodeId, dst: NodeId, type_: str, source_pid: str = "") -> bool:
        """Add an edge; False when the same edge from the same paper is already there.

        Raises ValueError when ``src`` or ``dst`` is no node of this store.
        """
        ...

    def node(self, node_id: NodeId) -> dict[str, Any]:
        """The node with this id, or ``{}``."""
        ...

    def find_nodes(self, type_: str | None, name: str) -> list[dict[str, Any]]:
        """Nodes (of ``type_``) whose name (any case), key, vocabulary id or alias is ``name``."""
        ...

    def nodes(self, type_: str | None = None) -> list[dict[str, Any]]:
        """Every node (of ``type_``)."""
        ...

    def edges(
        self, src: NodeId | None = None, dst: NodeId | None = None, type_: str | None = None
    ) -> list[dict[str, Any]]:
        """Edges matching the given endpoints and type."""
        ...

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """(nodes per type, edges per type)."""
        ...

    def commit(self) -> None:
        """Make the writes so far durable and visible to other connections."""
        ...

    def close(self) -> None:
        """Commit and close."""
        ...

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
