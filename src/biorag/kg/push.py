"""Bulk load of a local knowledge graph into a Neo4j (Bolt/openCypher) server, resumable.

:func:`push_kg` reads the triplets of ``DIR/kg.sqlite`` in insertion order and MERGEs them into
the server in batches of ``batch_size`` (one ``UNWIND`` query for the entities, one for the
relations, as :class:`~biorag.kg.stores.flat_neo4j.Neo4jKGStore` writes them), with a progress bar.

Resuming: after each batch ``DIR/neo4j_push.json`` records the server (URI and database, never a
password), how many triplets have been pushed and the key of the last one. A second run to the
same server starts after them, so an interrupted load goes on where it stopped and a KG that has
grown since is pushed incrementally. The checkpoint is only trusted if the triplet at that
position is still the one recorded (a KG replaced by ``kg import`` starts over). Writes are
MERGEs, so a batch written twice (interrupted between the write and the checkpoint) adds no
duplicate either: they are counted as ``duplicates``.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from biorag.errors import BioragError
from biorag.kg.models import Triplet, normalize_key
from biorag.kg.stores.flat_neo4j import Neo4jKGStore
from biorag.kg.stores.flat_sqlite import SQLiteKGStore
from biorag.kg.stores.neo4j_common import PASSWORD_ENV
from biorag.util.files import write_json_atomic
from biorag.util.progress import progress_bar

CHECKPOINT = "neo4j_push.json"


@dataclass
class PushReport:
    kg: str
    uri: str
    database: str | None
    local_triplets: int
    resumed_from: int  # triplets skipped because an earlier push had sent them
    pushed: int  # triplets sent by this run
    added: int  # relations the server created
    duplicates: int  # sent but already on the server
    invalid: int
    batches: int
    seconds: float
    server_triplets: int
    server_entities: int

    @property
    def triplets_per_s(self) -> float:
        return self.pushed / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "triplets_per_s": round(self.triplets_per_s, 1)}


def _key(t: Triplet) -> list[str]:
    return [normalize_key(t.subject), normalize_key(t.predicate), normalize_key(t.object)]


def _start(kg: Path, uri: str, database: str | None, local: Any, restart: bool) -> int:
    """Where this push starts: 0, or the position of a valid checkpoint for this server."""
    path = kg / CHECKPOINT
    if restart or not path.is_file():
        return 0
    try:
        cp = json.loads(path.read_text(encoding="utf-8"))
        done, last = int(cp["pushed"]), cp["last_key"]
        same = cp["uri"] == uri and cp.get("database") == database
    except (ValueError, KeyError, TypeError) as e:
        raise BioragError(
            f"{path}: not a push checkpoint ({e}); delete it or push again with restart",
            param="restart",
        ) from e
    if not same or done <= 0:
        return 0
    at = next(islice(local.iter_triplets(), done - 1, None), None)
    return done if at is not None and _key(at) == last else 0


def push_kg(
    kg: str | Path,
    uri: str,
    *,
    user: str = "neo4j",
    password_env: str = PASSWORD_ENV,
    database: str | None = None,
    batch_size: int = 1000,
    restart: bool = False,
) -> PushReport:
    """Push ``kg``'s triplets into the server at ``uri`` (see the module docstring)."""
    kg = Path(kg)
    if not (kg / "kg.sqlite").is_file():
        raise BioragError(f"{kg}: no knowledge graph here (no kg.sqlite): build one with kg build")
    if batch_size < 1:
        raise BioragError("batch_size must be at least 1", param="batch_size")
    local = SQLiteKGStore(kg)
    try:
        server = Neo4jKGStore(
            uri, user=user, password_env=password_env, database=database, batch_size=batch_size
        )
    except BaseException:
        local.close()
        raise
    with server:
        try:
            return _push(kg, local, server, uri, database, batch_size, restart)
        finally:
            local.close()


def _push(
    kg: Path,
    local: Any,
    server: Any,
    uri: str,
    database: str | None,
    batch_size: int,
    restart: bool,
) -> PushReport:
    total = local.count_triplets()
    start = _start(kg, uri, database, local, restart)
    report = PushReport(str(kg), uri, database, total, start, 0, 0, 0, 0, 0, 0.0, 0, 0)
    rest = islice(local.iter_triplets(), start, None)
    bar = progress_bar(total - start, f"push to {uri}", unit="triplet")
    t0 = time.perf_counter()
    try:
        while batch := list(islice(rest, batch_size)):
            r = server.add_triplets(batch)
            report.added += r.added
            report.duplicates += r.duplicates
            report.invalid += len(r.invalid)
            report.pushed += len(batch)
            report.batches += 1
            checkpoint = {
                "uri": uri,
                "database": database,
                "pushed": start + report.pushed,
                "last_key": _key(batch[-1]),
            }
            write_json_atomic(kg / CHECKPOINT, checkpoint)
            bar.update(len(batch))
    finally:
        bar.close()
        report.seconds = round(time.perf_counter() - t0, 3)
    report.server_triplets = server.count_triplets()
    report.server_entities = server.count_entities()
    return report
