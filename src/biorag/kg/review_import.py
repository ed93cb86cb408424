"""Re-importing an expert-reviewed triplet CSV into a knowledge-graph directory.

:func:`import_csv` either replaces the graph with the CSV's valid rows (swapping the flat tables
in only once the whole file was read; BioStrataKG's tables in the same ``kg.sqlite`` stay) or
adds them, then re-syncs the entity index and rewrites ``DIR/triplets.csv`` (see
:mod:`biorag.kg.directory` for the layout).
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from biorag.errors import BioragError
from biorag.kg.directory import REVIEW_FILE, require_kg, sync_entity_index
from biorag.kg.review import ImportReport, import_review_csv, write_review_csv
from biorag.kg.stores.factory import open_store
from biorag.kg.stores.sqlite_common import FILENAME

__all__ = ["ImportResult", "import_csv"]


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


def _swap_flat_tables(db_path: Path, new_path: Path) -> None:
    """Replace the flat graph (``entities``, ``triplets``) of ``db_path`` with ``new_path``'s.

    One transaction, in place: the other tables of the file (BioStrataKG's ``typed_*``) stay.
    """
    con = sqlite3.connect(db_path, isolation_level=None)
    try:
        con.execute("ATTACH DATABASE ? AS new", (str(new_path),))
        con.execute("BEGIN IMMEDIATE")
        try:
            con.execute("DELETE FROM main.triplets")
            con.execute("DELETE FROM main.entities")
            con.execute("INSERT INTO main.entities SELECT * FROM new.entities")
            con.execute("INSERT INTO main.triplets SELECT * FROM new.triplets")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("DETACH DATABASE new")
    finally:
        con.close()


@dataclass
class ImportResult:
    """What :func:`import_csv` did: the CSV report and the graph afterwards."""

    report: ImportReport
    mode: str
    triplets_before: int
    triplets_total: int
    entities_total: int
    entities_embedded: int
    entities_removed: int
    review_csv_rewritten: bool

    def to_dict(self) -> dict[str, Any]:
        r = self.report
        return {
            "mode": self.mode,
            "added": r.added,
            "duplicates": r.duplicates,
            "rejected": [{"line": line, "reason": why} for line, why in r.rejected],
            "triplets_before": self.triplets_before,
            "triplets_total": self.triplets_total,
            "entities_total": self.entities_total,
            "entities_embedded": self.entities_embedded,
            "entities_removed": self.entities_removed,
            "review_csv_rewritten": self.review_csv_rewritten,
        }


def import_csv(
    directory: str | Path, csv_file: str | Path, *, embedder: Any, replace: bool = True
) -> ImportResult:
    """Load a reviewed CSV into the KG at ``directory`` and re-sync its entity index.

    ``replace`` (default): the graph becomes exactly the CSV's valid rows. The rows go into a new
    store beside the old one, which replaces it only once the whole file was read (a CSV with a
    bad header changes nothing); entities no longer in the graph leave the entity index.
    ``replace=False`` adds the rows to the graph. Unless ``csv_file`` is ``DIR/triplets.csv``
    itself (whose rejected rows the expert still has to fix), that file is rewritten from the
    store afterwards.
    """
    d = require_kg(directory)
    csv_file = Path(csv_file)
    if not csv_file.is_file():
        raise BioragError(f"{csv_file}: no such CSV file")
    db_path = d / FILENAME
    store = open_store(d)
    try:
        before = store.count_triplets()
    finally:
        store.close()
    if replace:
        tmp = d / f".import.{os.getpid()}.sqlite"
        _remove_db(tmp)
        new = open_store(tmp)
        try:
            report = import_review_csv(csv_file, new)
        except BaseException:
            new.close()
            _remove_db(tmp)
            raise
        new.close()
        try:
            _swap_flat_tables(db_path, tmp)
        finally:
            _remove_db(tmp)
    store = open_store(d)
    try:
        if not replace:
            report = import_review_csv(csv_file, store)
        names = store.entities()
        embedded, removed = sync_entity_index(d, embedder, names, prune=replace)
        review = d / REVIEW_FILE
        rewrite = not (review.exists() and review.resolve() == csv_file.resolve())
        if rewrite:
            write_review_csv(store, review)
        return ImportResult(
            report=report,
            mode="replace" if replace else "add",
            triplets_before=before,
            triplets_total=store.count_triplets(),
            entities_total=store.count_entities(),
            entities_embedded=embedded,
            entities_removed=removed,
            review_csv_rewritten=rewrite,
        )
    finally:
        store.close()
