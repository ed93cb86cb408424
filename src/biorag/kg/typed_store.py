"""The typed-graph store interface (BioStrataKG) and its factory.

A typed graph has typed nodes, unique by ``(type, key)`` (the same surface form under two types
is two nodes), and typed, directed multi-edges with provenance: one edge per
``(src, dst, type, source_pid)``, so the same relation stated by three papers is three edges and
merging duplicates never loses a paper. Every node also has aliases (lower-cased surface forms
and vocabulary synonyms) that :meth:`TypedGraphStore.find_nodes` resolves.

Two backends implement :class:`TypedGraphStore`, beside the flat triplet store of
:mod:`biorag.kg.store`:

* ``"sqlite"`` (default, embedded): :class:`~biorag.kg.typed_sqlite_store.SQLiteTypedStore`,
  tables ``typed_nodes``/``typed_edges``/``typed_aliases`` in the same ``DIR/kg.sqlite`` as
  the flat store; node ids are integers.
* ``"neo4j"``: :class:`~biorag.kg.typed_neo4j_store.Neo4jTypedStore`, through the official
  driver; node ids are strings ``"Type:key"``.

Node ids are opaque: callers may only compare and hash them. Node and edge types must match
:data:`TYPE_PATTERN` (they become Neo4j labels, which cannot be query parameters).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Iterable
from pathlib import Path
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from biorag.errors import BioragError

NodeId: TypeAlias = Hashable
Backend: TypeAlias = Literal["sqlite", "neo4j"]
TYPE_PATTERN = re.compile(r"^[A-Z][A-Za-z0-9_]*$")


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


@runtime_checkable
class TypedGraphStore(Protocol):
    """Typed nodes and typed directed multi-edges with provenance and aliases.

    A node is returned as ``{"id", "type", "name", "key", "vocab_id", "attrs"}`` (``attrs`` a
    dict), an edge as ``{"src", "dst", "type", "source_pid"}``; listings are in insertion order.
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

    def __enter__(self) -> TypedGraphStore: ...

    def __exit__(self, *exc: object) -> None: ...


def open_typed_store(path: str | Path, backend: Backend = "sqlite", **kw: Any) -> TypedGraphStore:
    """Open (creating if needed) a typed-graph store.

    ``sqlite``: ``path`` is a directory (the file is ``path/kg.sqlite``, shared with the flat
    store) or a ``*.sqlite`` / ``*.db`` file (``":memory:"`` works). ``neo4j``: ``path`` is the
    server URI; keyword arguments ``user``, ``password_env`` (the NAME of the variable holding
    the password, ``BIORAG_NEO4J_PASSWORD`` by default) and ``database`` are passed on.
    """
    if backend == "sqlite":
        from biorag.kg.typed_sqlite_store import SQLiteTypedStore

        return SQLiteTypedStore(path, **kw)
    if backend == "neo4j":
        from biorag.kg.typed_neo4j_store import Neo4jTypedStore

        return Neo4jTypedStore(str(path), **kw)
    raise BioragError(f"unknown knowledge-graph backend {backend!r}: use 'sqlite' or 'neo4j'")
