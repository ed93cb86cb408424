"""The Neo4j knowledge-graph store (the graph database of the VectorGraphRAG paper).

Graph model: one node label ``Entity`` with properties ``key`` (the normalized name, see
:func:`~biorag.kg.models.normalize_key`; the uniqueness constraint ``biorag_entity_key`` is on
it, so "Vitamin C" and "vitamin  c" are one node), ``name`` (as first given) and ``seq``
(insertion order); ONE relationship type ``RELATION`` whose properties are ``predicate`` (the
text), ``predicate_key``, ``source_id``, ``model`` and ``seq``. A triplet is unique by
``(subject key, predicate_key, object key)``: writes ``MERGE`` on it, batched with ``UNWIND``.

Connection: ``uri`` (``bolt://host:7687`` / ``neo4j://...``), ``user`` and the NAME of the
environment variable holding the password (``BIORAG_NEO4J_PASSWORD`` by default; unset means no
authentication). The password is never logged nor put in an error message. ``seq`` counters are
kept by this client, so one writer at a time is assumed. Needs ``pip install 'biorag[neo4j]'``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from biorag.kg.models import AddReport, Triplet, normalize_key
from biorag.kg.neo4j_common import PASSWORD_ENV, Neo4jClient
from biorag.kg.store import Direction, prepare_triplets, unique_keys

LABEL, REL_TYPE = "Entity", "RELATION"

SCHEMA = (
    f"CREATE CONSTRAINT biorag_entity_key IF NOT EXISTS FOR (e:{LABEL}) REQUIRE e.key IS UNIQUE",
    f"CREATE INDEX biorag_entity_seq IF NOT EXISTS FOR (e:{LABEL}) ON (e.seq)",
    f"CREATE INDEX biorag_relation_seq IF NOT EXISTS FOR ()-[r:{REL_TYPE}]-() ON (r.seq)",
)
MERGE_ENTITIES = f"""
UNWIND $rows AS row
MERGE (e:{LABEL} {{key: row.key}})
ON CREATE SET e.name = row.name, e.seq = row.seq
"""
MERGE_RELATIONS = f"""
UNWIND $rows AS row
MATCH (s:{LABEL} {{key: row.s}}), (o:{LABEL} {{key: row.o}})
MERGE (s)-[r:{REL_TYPE} {{predicate_key: row.pk}}]->(o)
ON CREATE SET r.predicate = row.p, r.source_id = row.src, r.model = row.model, r.seq = row.seq
"""
_RETURN = (
    "RETURN startNode(r).name AS s, r.predicate AS p, endNode(r).name AS o,"
    " r.source_id AS src, r.model AS model"
)


def _record_triplet(rec: Any) -> Triplet:
    return Triplet(
        subject=rec["s"] or "",
        predicate=rec["p"] or "",
        object=rec["o"] or "",
        source_id=rec["src"] or "",
        model=rec["model"] or "",
    )


class Neo4jKGStore(Neo4jClient):
    """A :class:`~biorag.kg.store.KGStore` in a Neo4j database."""

    def __init__(
        self,
        uri: str,
        *,
        user: str = "neo4j",
        password_env: str = PASSWORD_ENV,
        database: str | None = None,
        batch_size: int = 1000,
    ):
        super().__init__(
            uri, user=user, password_env=password_env, database=database, schema=SCHEMA
        )
        self.batch_size = max(1, int(batch_size))
        self._next_entity = self._max_seq(f"MATCH (e:{LABEL}) RETURN max(e.seq) AS m") + 1
        self._next_rel = self._max_seq(f"MATCH ()-[r:{REL_TYPE}]->() RETURN max(r.seq) AS m") + 1

    # -- writes ----------------------------------------------------------------------------
    def add_triplets(self, triplets: Iterable[Triplet]) -> AddReport:
        """MERGE the valid triplets in batches of ``batch_size`` (one transaction per query)."""
        report = AddReport()
        prepared = prepare_triplets(triplets, report)
        while batch := list(islice(prepared, self.batch_size)):
            entities: dict[str, str] = {}
            rels: dict[tuple[str, str, str], dict[str, Any]] = {}
            for _, t in batch:
                entities.setdefault(t.subject_key, t.subject)
                entities.setdefault(t.object_key, t.object)
                k = (t.subject_key, t.predicate_key, t.object_key)
                if k not in rels:
                    seq = self._next_rel + len(rels)
                    rels[k] = {"s": k[0], "pk": k[1], "o": k[2], "p": t.predicate, "seq": seq}
                    rels[k].update(src=t.source_id, model=t.model)
            rows = [
                {"key": k, "name": n, "seq": self._next_entity + i}
                for i, (k, n) in enumerate(entities.items())
            ]
            self._run(MERGE_ENTITIES, rows=rows)
            self._next_entity += len(rows)
            _, summary = self._run(MERGE_RELATIONS, rows=list(rels.values()))
            self._next_rel += len(rels)
            created = int(summary.counters.relationships_created)
            report.added += created
            report.duplicates += len(batch) - created
        return report

    def clear(self) -> None:
        """Delete every Entity node and its relations (not part of the KGStore protocol)."""
        self._run(f"MATCH (e:{LABEL}) DETACH DELETE e")
        self._next_entity = self._next_rel = 0

    # -- reads -----------------------------------------------------------------------------
    def entities(self) -> list[str]:
        records, _ = self._run(f"MATCH (e:{LABEL}) RETURN e.name AS name ORDER BY e.seq", read=True)
        return [r["name"] for r in records]

    def has_entity(self, name: str) -> bool:
        records, _ = self._run(
            f"MATCH (e:{LABEL} {{key: $key}}) RETURN count(e) AS n",
            read=True,
            key=normalize_key(name),
        )
        return bool(records and records[0]["n"])

    def triplets_for_entities(
        self, names: Iterable[str], direction: Direction = "out"
    ) -> list[Triplet]:
        if direction not in ("out", "both"):
            raise ValueError(f"direction must be 'out' or 'both', not {direction!r}")
        keys = unique_keys(names)
        if not keys:
            return []
        arrow = "->" if direction == "out" else "-"
        pattern = f"(e)-[r:{REL_TYPE}]{arrow}()"
        records, _ = self._run(
            f"MATCH (e:{LABEL}) WHERE e.key IN $keys MATCH {pattern}"
            f" WITH DISTINCT r {_RETURN} ORDER BY r.seq",
            read=True,
            keys=keys,
        )
        return [_record_triplet(r) for r in records]

    def iter_triplets(self) -> Iterator[Triplet]:
        """Every relation in ``seq`` order, fetched in pages of 5000.

        Relations without ``seq`` (written by another tool, e.g. ``neo4j-admin database import``
        of :func:`~biorag.kg.export.export_kg` files) come last.
        """
        after = -1
        while True:
            records, _ = self._run(
                f"MATCH ()-[r:{REL_TYPE}]->() WHERE r.seq > $after"
                f" WITH r ORDER BY r.seq LIMIT 5000 {_RETURN}, r.seq AS seq",
                read=True,
                after=after,
            )
            if not records:
                break
            after = records[-1]["seq"]
            yield from (_record_triplet(r) for r in records)
        records, _ = self._run(
            f"MATCH ()-[r:{REL_TYPE}]->() WHERE r.seq IS NULL {_RETURN}", read=True
        )
        yield from (_record_triplet(r) for r in records)

    def count_triplets(self) -> int:
        records, _ = self._run(f"MATCH ()-[r:{REL_TYPE}]->() RETURN count(r) AS n", read=True)
        return int(records[0]["n"])

    def count_entities(self) -> int:
        records, _ = self._run(f"MATCH (e:{LABEL}) RETURN count(e) AS n", read=True)
        return int(records[0]["n"])
