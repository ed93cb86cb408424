"""Opening and inspecting a knowledge-graph directory, and keeping its entity index in sync.

A KG directory (``biorag kg build --out DIR``)::

    DIR/kg.sqlite        the triplet store (:class:`~biorag.kg.stores.flat_sqlite.SQLiteKGStore`)
    DIR/entities.*       the entity vector index (:class:`~biorag.kg.entity_index.EntityIndex`)
    DIR/triplets.csv     every triplet, for expert review (:mod:`biorag.kg.review`)
    DIR/build.json       what the last build read, extracted, dropped and stored

:func:`require_kg` checks a directory holds a graph, :func:`kg_stats` summarises it and
:func:`sync_entity_index` embeds the entities not indexed yet (optionally pruning stale ones).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from biorag.errors import BioragError
from biorag.kg.entity_index import FAISS, FORMAT, META, VECTORS, EntityIndex
from biorag.kg.models import normalize_key
from biorag.kg.stores.flat_sqlite import SQLiteKGStore
from biorag.kg.stores.sqlite_common import FILENAME
from biorag.util.files import write_json_atomic

__all__ = ["BUILD_FILE", "REVIEW_FILE", "kg_stats", "require_kg", "sync_entity_index"]

REVIEW_FILE = "triplets.csv"
BUILD_FILE = "build.json"


def sync_entity_index(
    directory: str | Path, embedder: Any, names: Sequence[str], *, prune: bool = False
) -> tuple[int, int]:
    """Embed the names not indexed yet; with ``prune`` first drop indexed names not in ``names``.

    Returns ``(embedded, removed)``. Pruning keeps the vectors of the remaining names (no
    re-embedding): it deletes ``entities.json`` first (a crash then leaves no index, rebuilt from
    scratch on the next sync), writes the kept rows, then the names.
    """
    directory = Path(directory)
    idx = EntityIndex.open(directory, embedder)
    removed = 0
    if prune and len(idx):
        keep = {normalize_key(n) for n in names}
        rows = [i for i, n in enumerate(idx.names) if normalize_key(n) in keep]
        removed = len(idx) - len(rows)
        if removed:
            (directory / META).unlink(missing_ok=True)
            (directory / FAISS).unlink(missing_ok=True)
            tmp = directory / f".{VECTORS}.prune.npy"
            np.save(tmp, np.ascontiguousarray(idx.vectors[rows], dtype=np.float32))
            tmp.replace(directory / VECTORS)
            meta = {
                "format": FORMAT,
                "model_id": idx.model_id,
                "dim": idx.dim,
                "names": [idx.names[i] for i in rows],
            }
            write_json_atomic(directory / META, meta)
            idx = EntityIndex.open(directory, embedder)  # rebuilds the FAISS file
    return idx.sync(names), removed


def require_kg(directory: str | Path) -> Path:
    """``directory`` if it holds a knowledge graph (``kg.sqlite``), else a one-line error."""
    d = Path(directory)
    if not d.is_dir():
        raise BioragError(
            f"{d}: no such knowledge-graph directory (build one with biorag kg build)",
            param="kg",
        )
    if not (d / FILENAME).is_file():
        raise BioragError(f"{d}: no {FILENAME} in it; build one with biorag kg build", param="kg")
    return d


def kg_stats(directory: str | Path, top: int = 10) -> dict[str, Any]:
    """Counts, the most frequent predicates and subjects, the entity index and the last build."""
    d = require_kg(directory)
    store = SQLiteKGStore(d)  # what open_store(d) opens; its .db is needed below
    db = store.db  # the SQLite store's connection: the aggregate queries below are SQL
    try:
        one = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
        out: dict[str, Any] = {
            "kg": str(d),
            "store": str(d / FILENAME),
            "store_bytes": (d / FILENAME).stat().st_size,
            "triplets": one("SELECT count(*) FROM triplets"),
            "entities": one("SELECT count(*) FROM entities"),
            "predicates": one("SELECT count(DISTINCT predicate_key) FROM triplets"),
            "sources": one("SELECT count(DISTINCT source_id) FROM triplets"),
            "models": dict(
                db.execute("SELECT model, count(*) FROM triplets GROUP BY model ORDER BY 2 DESC")
            ),
            "top_predicates": [
                {"predicate": p, "triplets": n}
                for p, n in db.execute(
                    "SELECT min(predicate), count(*) FROM triplets GROUP BY predicate_key"
                    " ORDER BY 2 DESC, 1 LIMIT ?",
                    (top,),
                )
            ],
            "top_subjects": [
                {"entity": e, "out_degree": n}
                for e, n in db.execute(
                    "SELECT e.name, c.n FROM (SELECT subject_id, count(*) AS n FROM triplets"
                    " GROUP BY subject_id ORDER BY n DESC, subject_id LIMIT ?) c"
                    " JOIN entities e ON e.id = c.subject_id ORDER BY c.n DESC, e.id",
                    (top,),
                )
            ],
        }
        keys = {r[0] for r in db.execute("SELECT key FROM entities")}
    finally:
        store.close()
    meta_path = d / META
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        indexed = {normalize_key(str(n)) for n in meta.get("names", [])}
        out["entity_index"] = {
            "model_id": meta.get("model_id"),
            "dim": meta.get("dim"),
            "indexed": len(meta.get("names", [])),
            "not_indexed": len(keys - indexed),
            "stale": len(indexed - keys),
        }
    else:
        out["entity_index"] = None
    review = d / REVIEW_FILE
    out["review_csv"] = str(review) if review.is_file() else None
    build = d / BUILD_FILE
    if build.is_file():
        b = json.loads(build.read_text(encoding="utf-8"))
        out["last_build"] = {
            k: b.get(k)
            for k in (
                "built_at",
                "source",
                "format",
                "half",
                "extractor",
                "embed_model",
                "units_kept",
                "extracted",
                "added",
                "dropped_count",
            )
        }
    return out
