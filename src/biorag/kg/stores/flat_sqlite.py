"""The embedded knowledge-graph store: one SQLite file, no server (the default backend).

Schema (file ``DIR/kg.sqlite``, WAL journal)::

    entities(id INTEGER PRIMARY KEY, name, key UNIQUE)            -- key = normalize_key(name)
    triplets(id INTEGER PRIMARY KEY, subject_id, predicate, predicate_key, object_id,
             source_id, model, UNIQUE(subject_id, predicate_key, object_id))

``id`` order is insertion order. Every lookup by name goes through its key, so the UNIQUE index
on ``entities.key`` serves it. 1-hop expansion: outgoing edges use the UNIQUE index on
``triplets(subject_id, predicate_key, object_id)`` (``subject_id`` leads it, so a separate
subject index would only slow inserts down), incoming ones the index ``triplets_object``.

Inserts run in batches of ``batch_size``, one ``BEGIN IMMEDIATE`` transaction each (a kill loses
at most the batch in flight): an in-memory ``key -> id`` map (reloaded when ``PRAGMA
data_version`` shows another connection wrote) assigns new entity ids, then one ``executemany``
fills each table (``INSERT OR IGNORE`` on triplets counts the duplicates). Readers may be many
(WAL); writers take turns on the write lock.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from pathlib import Path
from typing import Any

from biorag.kg.models import AddReport, Triplet, normalize_key
from biorag.kg.stores.interfaces import Direction, PreparedTriplet, lookup_keys, prepare_triplets
from biorag.kg.stores.sqlite_common import connect_kg_db, kg_db_path

_CHUNK = 500  # ids per IN (...) list, well under SQLite's bound-parameter limit

SCHEMA = """
CREATE TABLE IF NOT EXISTS entities (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    key TEXT NOT NULL UNIQUE
);
CREATE TABLE IF NOT EXISTS triplets (
    id INTEGER PRIMARY KEY,
    subject_id INTEGER NOT NULL REFERENCES entities(id),
    predicate TEXT NOT NULL,
    predicate_key TEXT NOT NULL,
    object_id INTEGER NOT NULL REFERENCES entities(id),
    source_id TEXT NOT NULL DEFAULT '',
    model TEXT NOT NULL DEFAULT '',
    UNIQUE (subject_id, predicate_key, object_id)
);
CREATE INDEX IF NOT EXISTS triplets_object ON triplets(object_id);
"""

_SELECT = (
    "SELECT t.id, s.name, t.predicate, o.name, t.source_id, t.model FROM triplets t"
    " JOIN entities s ON s.id = t.subject_id JOIN entities o ON o.id = t.object_id"
)


def _row_triplet(row: Sequence[Any]) -> Triplet:
    # values come from our own tables (all str): skip pydantic validation on the read path
    return Triplet.model_construct(
        subject=row[1], predicate=row[2], object=row[3], source_id=row[4], model=row[5]
    )


def _chunks(items: Sequence[Any], size: int = _CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class SQLiteKGStore:
    """A :class:`~biorag.kg.stores.interfaces.KGStore` in one SQLite file (safe to share across
    threads)."""

    def __init__(self, path: str | Path, *, batch_size: int = 20_000):
        self.path = kg_db_path(path)
        self.batch_size = max(1, int(batch_size))
        self._lock = threading.RLock()
        self._ids: dict[str, int] | None = None  # key -> entity id, loaded on the first write
        self._version = -1  # PRAGMA data_version when _ids was loaded
        self.db = connect_kg_db(
            self.path,
            SCHEMA,
            ("cache_size=-65536",),  # 64 MiB: random index inserts
            check_same_thread=False,
            isolation_level=None,
        )

    def __repr__(self) -> str:
        return f"SQLiteKGStore({str(self.path)!r})"

    def __enter__(self) -> SQLiteKGStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            self.db.close()

    # -- writes ----------------------------------------------------------------------------
    def add_triplets(self, triplets: Iterable[Triplet]) -> AddReport:
        """Store the valid new triplets in batches of ``batch_size``, one transaction each."""
        report = AddReport()
        prepared = prepare_triplets(triplets, report)
        with self._lock:
            while batch := list(islice(prepared, self.batch_size)):
                added = self._write_batch([t for _, t in batch])
                report.added += added
                report.duplicates += len(batch) - added
        return report

    def _entity_ids(self) -> dict[str, int]:
        """The ``key -> id`` map; reloaded when another connection has committed since."""
        version = self.db.execute("PRAGMA data_version").fetchone()[0]
        if self._ids is None or version != self._version:
            self._ids = dict(self.db.execute("SELECT key, id FROM entities"))
            self._version = version
        return self._ids

    def _write_batch(self, batch: list[PreparedTriplet]) -> int:
        """Insert one batch in a transaction; returns how many triplets were new.

        Inside ``BEGIN IMMEDIATE`` this connection holds the write lock, so new entity ids can be
        assigned here (``max(id) + 1`` on) and both tables filled with one ``executemany`` each.
        """
        self.db.execute("BEGIN IMMEDIATE")
        ids = self._entity_ids()
        new: list[tuple[int, str, str]] = []
        try:
            next_id = self.db.execute("SELECT coalesce(max(id), 0) + 1 FROM entities").fetchone()[0]
            rows = []
            for t in batch:
                sid = ids.get(t.subject_key)
                if sid is None:
                    sid = ids[t.subject_key] = next_id
                    new.append((next_id, t.subject, t.subject_key))
                    next_id += 1
                oid = ids.get(t.object_key)
                if oid is None:
                    oid = ids[t.object_key] = next_id
                    new.append((next_id, t.object, t.object_key))
                    next_id += 1
                rows.append((sid, t.predicate, t.predicate_key, oid, t.source_id, t.model))
            self.db.executemany("INSERT INTO entities(id, name, key) VALUES (?, ?, ?)", new)
            before = self.db.total_changes
            self.db.executemany(
                "INSERT OR IGNORE INTO triplets"
                "(subject_id, predicate, predicate_key, object_id, source_id, model)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            added = self.db.total_changes - before
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:
                self.db.execute("ROLLBACK")
            self._ids = None  # may hold ids that were rolled back
            raise
        return added

    def clear(self) -> None:
        """Delete every triplet and entity (not part of the KGStore protocol)."""
        with self._lock:
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("DELETE FROM triplets")
            self.db.execute("DELETE FROM entities")
            self.db.execute("COMMIT")
            self._ids = None

    # -- reads -----------------------------------------------------------------------------
    def entities(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self.db.execute("SELECT name FROM entities ORDER BY id")]

    def has_entity(self, name: str) -> bool:
        key = normalize_key(name)
        with self._lock:
            row = self.db.execute("SELECT 1 FROM entities WHERE key = ?", (key,)).fetchone()
        return row is not None

    def _ids_of(self, keys: list[str]) -> list[int]:
        out: list[int] = []
        for chunk in _chunks(keys):
            marks = ",".join("?" * len(chunk))
            sql = f"SELECT id FROM entities WHERE key IN ({marks})"
            out.extend(r[0] for r in self.db.execute(sql, tuple(chunk)))
        return out

    def triplets_for_entities(
        self, names: Iterable[str], direction: Direction = "out"
    ) -> list[Triplet]:
        keys = lookup_keys(names, direction)
        found: dict[int, Triplet] = {}
        with self._lock:
            ids = self._ids_of(keys)
            for chunk in _chunks(ids):
                marks = ",".join("?" * len(chunk))
                where = f"t.subject_id IN ({marks})"
                params = tuple(chunk)
                if direction == "both":
                    where += f" OR t.object_id IN ({marks})"
                    params += params
                for row in self.db.execute(f"{_SELECT} WHERE {where}", params):
                    found.setdefault(row[0], _row_triplet(row))
        return [found[i] for i in sorted(found)]

    def iter_triplets(self) -> Iterator[Triplet]:
        """Every triplet in insertion order, read in pages (no cursor is held between yields)."""
        last = 0
        while True:
            with self._lock:
                rows = self.db.execute(
                    f"{_SELECT} WHERE t.id > ? ORDER BY t.id LIMIT 2000", (last,)
                ).fetchall()
            if not rows:
                return
            last = rows[-1][0]
            yield from (_row_triplet(r) for r in rows)

    def count_triplets(self) -> int:
        with self._lock:
            return int(self.db.execute("SELECT count(*) FROM triplets").fetchone()[0])

    def count_entities(self) -> int:
        with self._lock:
            return int(self.db.execute("SELECT count(*) FROM entities").fetchone()[0])
