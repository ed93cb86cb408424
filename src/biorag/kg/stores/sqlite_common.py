"""What the SQLite stores share: the knowledge graph's file and opening it.

Both layers (:mod:`biorag.kg.stores.flat_sqlite`, the flat triplets, and
:mod:`biorag.kg.stores.typed_sqlite`, BioStrataKG's typed graph) keep their tables in one file,
``DIR/kg.sqlite`` (WAL journal).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from biorag.errors import BioragError

FILENAME = "kg.sqlite"


def kg_db_path(path: str | Path) -> Path:
    """The SQLite file for ``path``: itself for ``*.sqlite``/``*.db``/an existing file or
    ``:memory:``, else ``path/kg.sqlite``."""
    p = Path(path)
    if str(path) == ":memory:" or p.suffix in (".sqlite", ".db") or p.is_file():
        return p
    return p / FILENAME


def connect_kg_db(
    path: Path, schema: str, pragmas: tuple[str, ...] = (), **connect: Any
) -> sqlite3.Connection:
    """A connection to the knowledge-graph file ``path`` (WAL journal), ``schema`` created;
    a one-line BioragError naming the path when it cannot be opened. Both layers of the shared
    store (flat triplets, BioStrataKG's typed graph) open their file this way."""
    try:
        if str(path) != ":memory:":
            path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(path, **connect)
        for pragma in ("journal_mode=WAL", "synchronous=NORMAL", *pragmas):
            db.execute(f"PRAGMA {pragma}")
        db.executescript(schema)
    except (OSError, sqlite3.Error) as e:
        raise BioragError(
            f"cannot open the knowledge graph {path}: {e}; "
            "pass a directory (the file is kg.sqlite) or an SQLite file it can write"
        ) from e
    return db
