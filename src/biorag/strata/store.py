"""The BioStrataKG store: typed nodes and typed, directed multi-edges with provenance (SQLite).

``nodes(id, type, name, key, vocab_id, attrs)`` with ``UNIQUE(type, key)``: the same surface
form under two types is two nodes. ``edges(src, dst, type, source_pid)`` with
``UNIQUE(src, dst, type, source_pid)``: one edge per paper that states it, so merging
duplicates keeps every provenance. ``source_pid`` is ``''`` when there is none.
``aliases(node_id, alias)`` holds the lower-cased surface forms and vocabulary synonyms that
resolve to a node, so queries find "type 2 diabetes" as well as "Diabetes Mellitus, Type 2".
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

_SCHEMA = """
CREATE TABLE IF NOT EXISTS nodes (
    id INTEGER PRIMARY KEY,
    type TEXT NOT NULL,
    name TEXT NOT NULL,
    key TEXT NOT NULL,
    vocab_id TEXT,
    attrs TEXT NOT NULL DEFAULT '{}',
    UNIQUE(type, key)
);
CREATE TABLE IF NOT EXISTS edges (
    id INTEGER PRIMARY KEY,
    src INTEGER NOT NULL REFERENCES nodes(id),
    dst INTEGER NOT NULL REFERENCES nodes(id),
    type TEXT NOT NULL,
    source_pid TEXT NOT NULL DEFAULT '',
    UNIQUE(src, dst, type, source_pid)
);
CREATE TABLE IF NOT EXISTS aliases (
    node_id INTEGER NOT NULL REFERENCES nodes(id),
    alias TEXT NOT NULL,
    UNIQUE(node_id, alias)
);
CREATE INDEX IF NOT EXISTS aliases_alias ON aliases(alias);
CREATE INDEX IF NOT EXISTS edges_src ON edges(src, type);
CREATE INDEX IF NOT EXISTS edges_dst ON edges(dst, type);
CREATE INDEX IF NOT EXISTS nodes_name ON nodes(type, name COLLATE NOCASE);
"""


def node_key(name: str) -> str:
    """The merge key of an unnormalized name: lower-cased, whitespace collapsed."""
    return " ".join(name.lower().split())


class StrataStore:
    """Open (creating if needed) the strata graph at ``path`` (``":memory:"`` works)."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.conn = sqlite3.connect(self.path)
        self.conn.row_factory = sqlite3.Row
        self.conn.executescript(_SCHEMA)

    def close(self) -> None:
        self.conn.commit()
        self.conn.close()

    def __enter__(self) -> StrataStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def commit(self) -> None:
        self.conn.commit()

    def upsert_node(
        self,
        type_: str,
        key: str,
        name: str,
        vocab_id: str | None = None,
        attrs: dict[str, Any] | None = None,
    ) -> int:
        """The id of node (type, key), created when new; attrs are merged into existing ones."""
        row = self.conn.execute(
            "SELECT id, attrs, vocab_id FROM nodes WHERE type=? AND key=?", (type_, key)
        ).fetchone()
        if row is None:
            cur = self.conn.execute(
                "INSERT INTO nodes(type, name, key, vocab_id, attrs) VALUES (?,?,?,?,?)",
                (type_, name, key, vocab_id, json.dumps(attrs or {})),
            )
            return int(cur.lastrowid or 0)
        if attrs or (vocab_id and not row["vocab_id"]):
            merged = {**json.loads(row["attrs"]), **(attrs or {})}
            self.conn.execute(
                "UPDATE nodes SET attrs=?, vocab_id=COALESCE(vocab_id, ?) WHERE id=?",
                (json.dumps(merged), vocab_id, row["id"]),
            )
        return int(row["id"])

    def add_aliases(self, node_id: int, aliases: list[str]) -> None:
        self.conn.executemany(
            "INSERT OR IGNORE INTO aliases(node_id, alias) VALUES (?, ?)",
            [(node_id, node_key(a)) for a in aliases if a.strip()],
        )

    def add_edge(self, src: int, dst: int, type_: str, source_pid: str = "") -> bool:
        """Add an edge; False when the same edge from the same paper is already there."""
        cur = self.conn.execute(
            "INSERT OR IGNORE INTO edges(src, dst, type, source_pid) VALUES (?,?,?,?)",
            (src, dst, type_, source_pid or ""),
        )
        return cur.rowcount > 0

    def node(self, node_id: int) -> dict[str, Any]:
        row = self.conn.execute("SELECT * FROM nodes WHERE id=?", (node_id,)).fetchone()
        return _node(row) if row else {}

    def find_nodes(self, type_: str | None, name: str) -> list[dict[str, Any]]:
        """Nodes (of ``type_``) whose name, key, vocabulary id or an alias equals ``name``."""
        q = (
            "SELECT * FROM nodes WHERE (name = ? COLLATE NOCASE OR key IN (?, ?) OR vocab_id = ? "
            "OR id IN (SELECT node_id FROM aliases WHERE alias = ?))"
        )
        args: list[Any] = [name, name, node_key(name), name, node_key(name)]
        if type_ is not None:
            q += " AND type = ?"
            args.append(type_)
        return [_node(r) for r in self.conn.execute(q, args)]

    def nodes(self, type_: str | None = None) -> list[dict[str, Any]]:
        if type_ is None:
            rows = self.conn.execute("SELECT * FROM nodes ORDER BY id")
        else:
            rows = self.conn.execute("SELECT * FROM nodes WHERE type=? ORDER BY id", (type_,))
        return [_node(r) for r in rows]

    def edges(
        self,
        src: int | None = None,
        dst: int | None = None,
        type_: str | None = None,
    ) -> list[dict[str, Any]]:
        """Edges matching the given endpoints / type (each row: src, dst, type, source_pid)."""
        q, args = "SELECT src, dst, type, source_pid FROM edges WHERE 1=1", []
        for col, val in (("src", src), ("dst", dst), ("type", type_)):
            if val is not None:
                q += f" AND {col} = ?"
                args.append(val)
        return [dict(r) for r in self.conn.execute(q + " ORDER BY id", args)]

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """(nodes per type, edges per type)."""
        n = Counter({r[0]: r[1] for r in self.conn.execute(
            "SELECT type, COUNT(*) FROM nodes GROUP BY type")})  # fmt: skip
        e = Counter({r[0]: r[1] for r in self.conn.execute(
            "SELECT type, COUNT(*) FROM edges GROUP BY type")})  # fmt: skip
        return dict(n), dict(e)


def _node(row: sqlite3.Row) -> dict[str, Any]:
    d = dict(row)
    d["attrs"] = json.loads(d.get("attrs") or "{}")
    return d
