"""Opening a knowledge-graph store: :func:`open_store` (flat triplets) and
:func:`open_typed_store` (BioStrataKG's typed graph), each with two backends.

* ``"sqlite"`` (default, embedded, no server): :class:`~biorag.kg.stores.flat_sqlite.SQLiteKGStore`
  and :class:`~biorag.kg.stores.typed_sqlite.SQLiteTypedStore`, tables in the same
  ``DIR/kg.sqlite`` (typed node ids are integers).
* ``"neo4j"``: :class:`~biorag.kg.stores.flat_neo4j.Neo4jKGStore` and
  :class:`~biorag.kg.stores.typed_neo4j.Neo4jTypedStore`, the graph database of the
  VectorGraphRAG paper, through the official driver (``pip install 'biorag[neo4j]'``; it is
  imported only when such a store is opened). Typed node ids are strings ``"Type:key"``.

The backends import only :mod:`biorag.kg.stores.interfaces` and their shared helpers, never
this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from biorag.errors import BioragError
from biorag.kg.stores.flat_neo4j import Neo4jKGStore
from biorag.kg.stores.flat_sqlite import SQLiteKGStore
from biorag.kg.stores.interfaces import Backend, KGStore, TypedGraphStore
from biorag.kg.stores.typed_neo4j import Neo4jTypedStore
from biorag.kg.stores.typed_sqlite import SQLiteTypedStore


def _unknown(backend: object) -> BioragError:
    return BioragError(f"unknown knowledge-graph backend {backend!r}: use 'sqlite' or 'neo4j'")


def open_store(path: str | Path, backend: Backend = "sqlite", **kw: Any) -> KGStore:
    """Open (creating if needed) a knowledge-graph store.

    ``sqlite``: ``path`` is a directory (the file is ``path/kg.sqlite``) or a ``*.sqlite`` /
    ``*.db`` file. ``neo4j``: ``path`` is the server URI (``bolt://`` / ``neo4j://``); keyword
    arguments ``user``, ``password_env`` (the NAME of the variable holding the password,
    ``BIORAG_NEO4J_PASSWORD`` by default), ``database`` and ``batch_size`` are passed on.
    """
    if backend == "sqlite":
        return SQLiteKGStore(path, **kw)
    if backend == "neo4j":
        return Neo4jKGStore(str(path), **kw)
    raise _unknown(backend)


def open_typed_store(path: str | Path, backend: Backend = "sqlite", **kw: Any) -> TypedGraphStore:
    """Open (creating if needed) a typed-graph store.

    ``sqlite``: ``path`` is a directory (the file is ``path/kg.sqlite``, shared with the flat
    store) or a ``*.sqlite`` / ``*.db`` file (``":memory:"`` works). ``neo4j``: ``path`` is the
    server URI; keyword arguments ``user``, ``password_env`` (the NAME of the variable holding
    the password, ``BIORAG_NEO4J_PASSWORD`` by default) and ``database`` are passed on.
    """
    if backend == "sqlite":
        return SQLiteTypedStore(path, **kw)
    if backend == "neo4j":
        return Neo4jTypedStore(str(path), **kw)
    raise _unknown(backend)
