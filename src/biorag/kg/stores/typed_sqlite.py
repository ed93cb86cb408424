"""The embedded typed-graph store (BioStrataKG): three tables in the knowledge graph's SQLite file.

Schema (in ``DIR/kg.sqlite`` beside the flat store's ``entities``/``triplets``, WAL journal)::

    typed_nodes(id INTEGER PRIMARY KEY, type, name, key, vocab_id, attrs JSON,
                UNIQUE(type, key))                     -- one node per (type, key)
    typed_edges(id INTEGER PRIMARY KEY, src, dst, type, source_pid,
                UNIQUE(src, dst, type, source_pid))    -- one edge per stating paper
    typed_aliases(node_id, alias, UNIQUE(node_id, alias))

``source_pid`` is ``''`` when there is none. Node ids are the ``typed_nodes`` row ids, so
``id`` order is insertion order. Writes run in one implicit transaction until :meth:`commit`
(or :meth:`close`), which keeps a build fast; foreign keys are enforced, so an edge or alias for
a node that does not exist is a ValueError.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from biorag.kg.stores.interfaces import (
    NodeId,
    StoredNode,
    TypedGraphStore,
    check_type,
    node_key,
    unique_aliases,
)
from biorag.kg.stores.sqlite_common import connect_kg_db, kg_db_path

SCHEMA = """
CREATE TABLE IF NOT EXISTS typed_nodes (
    id INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    vocab_id TEXT,
    attrs TEXT NOT NULL DEFAULT '{}',
    UNIQUE(type, key)
);
CREATE TABLE IF NOT EXISTS typed_edges (
    id INTEGER PRIMARY KEY,
    src INTEGER NOT NULL REFERENCES typed_nodes(id),
    dst INTEGER NOT NULL REFERENCES typed_nodes(id),
    type TEXT NOT NULL,
    source_pid TEXT NOT NULL DEFAULT '',
    UNIQUE(src, dst, type, source_pid)
);
CREATE TABLE IF NOT EXISTS typed_aliases (
    node_id INTEGER NOT NULL REFERENCES typed_nodes(id),
    alias TEXT NOT NULL,
    UNIQUE(node_id, alias)
);
CREATE INDEX IF NOT EXISTS typed_aliases_alias ON typed_aliases(alias);
CREATE INDEX IF NOT EXISTS typed_edges_src ON typed_edges(src, type);
CREATE INDEX IF NOT EXISTS typed_edges_dst ON typed_edges(dst, type);
CREATE INDEX IF NOT EXISTS typed_nodes_name ON typed_nodes(type, name COLLATE NOCASE);
CREATE INDEX IF NOT EXISTS typed_nodes_vocab ON typed_nodes(vocab_id);
"""


def _node(row: sqlite3.Row) -> dict[str, Any]:
    d = dict(row)
    d["attrs"] = json.loads(d.get("attrs") or "{}")
    return d


class SQLiteTypedStore(TypedGraphStore):
    """A :class:`~biorag.kg.stores.interfaces.TypedGraphStore` in the knowledge graph's SQLite
    file."""

    def __init__(self, path: str | Path) -> None:
        self.path = kg_db_path(path)
        self.conn = connect_kg_db(self.path, SCHEMA, ("foreign_keys=ON",))
        self.conn.row_factory = sqlite3.Row

    def __repr__(self) -> str:
        return f"SQLiteTypedStore({str(self.path)!r})"

    def commit(self) -> None:
        self.conn.commit()

    def close(self) -> None:
        """Commit and close the connection."""
        self.conn.commit()
        self.conn.close()

    def clear(self) -> None:
        """Delete every typed node, edge and alias (not part of the protocol)."""
        for table in ("typed_aliases", "typed_edges", "typed_nodes"):
            self.conn.execute(f"DELETE FROM {table}")
        self.conn.commit()

    # -- writes (upsert_node: TypedGraphStore's, through these two) ------------------------
    def _merge_node(
        self, type_: str, key: str, name: str, vocab_id: str | None, attrs: str
    ) -> tuple[NodeId, StoredNode | None]:
        row = self.conn.execute(
            "SELECT id, attrs, vocab_id FROM typed_nodes WHERE type=? AND key=?", (type_, key)
        ).fetchone()
        if row is not None:
            return int(row["id"]), StoredNode(row["attrs"], row["vocab_id"])
        cur = self.conn.execute(
            "INSERT INTO typed_nodes(type, name, key, vocab_id, attrs) VALUES (?,?,?,?,?)",
            (type_, name, key, vocab_id, attrs),
        )
        return int(cur.lastrowid or 0), None

    def _update_node(self, node_id: NodeId, attrs: str, vocab_id: str | None) -> None:
        self.conn.execute(
            "UPDATE typed_nodes SET attrs=?, vocab_id=COALESCE(vocab_id, ?) WHERE id=?",
            (attrs, vocab_id, node_id),
        )

    def add_aliases(self, node_id: Any, aliases: Iterable[str]) -> None:
        rows = [(node_id, a) for a in unique_aliases(aliases)]
        try:
            self.conn.executemany(
                "INSERT OR IGNORE INTO typed_aliases(node_id, alias) VALUES (?, ?)", rows
            )
        except sqlite3.IntegrityError as e:
            raise ValueError(f"add_aliases: no node with id {node_id!r}") from e

    def add_edge(self, src: Any, dst: Any, type_: str, source_pid: str = "") -> bool:
        """Add an edge; False when the same edge from the same paper is already there."""
        check_type(type_, "edge type")
        try:
            cur = self.conn.execute(
                "INSERT OR IGNORE INTO typed_edges(src, dst, type, source_pid) VALUES (?,?,?,?)",
                (src, dst, type_, source_pid or ""),
            )
        except sqlite3.IntegrityError as e:
            raise ValueError(f"add_edge: no node with id {src!r} or {dst!r}") from e
        return cur.rowcount > 0

    # -- reads -----------------------------------------------------------------------------
    def node(self, node_id: Any) -> dict[str, Any]:
        row = self.conn.execute("SELECT * FROM typed_nodes WHERE id=?", (node_id,)).fetchone()
        return _node(row) if row else {}

    def find_nodes(self, type_: str | None, name: str) -> list[dict[str, Any]]:
        """Nodes (of ``type_``) whose name, key, vocabulary id or an alias equals ``name``."""
        key = node_key(name)
        q = (
            "SELECT * FROM typed_nodes WHERE (name = ? COLLATE NOCASE OR key IN (?, ?)"
            " OR vocab_id = ? OR id IN (SELECT node_id FROM typed_aliases WHERE alias = ?))"
        )
        args: list[Any] = [name, name, key, name, key]
        if type_ is not None:
            q += " AND type = ?"
            args.append(check_type(type_))
        return [_node(r) for r in self.conn.execute(q + " ORDER BY id", args)]

    def nodes(self, type_: str | None = None) -> list[dict[str, Any]]:
        if type_ is None:
            rows = self.conn.execute("SELECT * FROM typed_nodes ORDER BY id")
        else:
            rows = self.conn.execute(
                "SELECT * FROM typed_nodes WHERE type=? ORDER BY id", (check_type(type_),)
            )
        return [_node(r) for r in rows]

    def edges(
        self, src: Any = None, dst: Any = None, type_: str | None = None
    ) -> list[dict[str, Any]]:
        """Edges matching the given endpoints / type (each row: src, dst, type, source_pid)."""
        q, args = "SELECT src, dst, type, source_pid FROM typed_edges WHERE 1=1", []
        for col, val in (("src", src), ("dst", dst), ("type", type_)):
            if val is not None:
                q += f" AND {col} = ?"
                args.append(val)
        return [dict(r) for r in self.conn.execute(q + " ORDER BY id", args)]

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """(nodes per type, edges per type)."""
        nodes = self.conn.execute("SELECT type, COUNT(*) FROM typed_nodes GROUP BY type")
        edges = self.conn.execute("SELECT type, COUNT(*) FROM typed_edges GROUP BY type")
        return {r[0]: r[1] for r in nodes}, {r[0]: r[1] for r in edges}
