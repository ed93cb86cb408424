"""The Neo4j knowledge-graph store (the graph database of the VectorGraphRAG paper).

Graph model: one node label ``Entity`` with properties ``key`` (the normalized name, see
:func:`~biorag.kg.models.normalize_key`; the uniqueness constraint ``biorag_entity_key`` is on
it, so "Vitamin C" and "vitamin  c" are one node), ``name`` (as first given) and ``seq``
(insertion order); ONE relationship type ``RELATION`` whose properties are ``predicate`` (the
text), ``predicate_key``, ``source_id``, ``model``, ``seq`` and ``key``. A triplet is unique by
``(subject key, predicate_key, object key)``, which ``key`` joins (with ``\x1f``, which no
normalized key holds). Writes are batched with ``UNWIND``: entities ``MERGE`` on their key, then
the batch's relation keys are looked up in the ``biorag_relation_key`` index and only the
missing relations are ``CREATE``d. (A ``MERGE`` of the relation pattern costs time in the degree
of its end nodes on some servers, ArcadeDB among them, so loading a graph with hub entities
became quadratic.) Relations written before ``key`` existed get it when the store is opened.

Connection: ``uri`` (``bolt://host:7687`` / ``neo4j://...``), ``user`` and the NAME of the
environment variable holding the password (``BIORAG_NEO4J_PASSWORD`` by default; unset means no
authentication). The password is never logged nor put in an error message. ``seq`` counters are
kept by this client, so one writer at a time is assumed. Needs ``pip install 'biorag[neo4j]'``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any, Unpack

from biorag.kg.models import AddReport, Triplet, normalize_key
from biorag.kg.stores.interfaces import Direction, lookup_keys, prepare_triplets
from biorag.kg.stores.neo4j_common import Neo4jClient, Neo4jConnection

LABEL, REL_TYPE = "Entity", "RELATION"

SCHEMA = (
    f"CREATE CONSTRAINT biorag_entity_key IF NOT EXISTS FOR (e:{LABEL}) REQUIRE e.key IS UNIQUE",
    f"CREATE INDEX biorag_entity_seq IF NOT EXISTS FOR (e:{LABEL}) ON (e.seq)",
    f"CREATE INDEX biorag_relation_seq IF NOT EXISTS FOR ()-[r:{REL_TYPE}]-() ON (r.seq)",
    f"CREATE INDEX biorag_relation_key IF NOT EXISTS FOR ()-[r:{REL_TYPE}]-() ON (r.key)",
)
SEP = "\x1f"  # between the three keys of a relation key; whitespace, so in no normalized key
MERGE_ENTITIES = f"""
UNWIND $rows AS row
MERGE (e:{LABEL} {{key: row.key}})
ON CREATE SET e.name = row.name, e.seq = row.seq
"""
EXISTING_RELATIONS = f"MATCH ()-[r:{REL_TYPE}]->() WHERE r.key IN $keys RETURN r.key AS key"
CREATE_RELATIONS = f"""
UNWIND $rows AS row
MATCH (s:{LABEL} {{key: row.s}}), (o:{LABEL} {{key: row.o}})
CREATE (s)-[r:{REL_TYPE} {{key: row.key, predicate_key: row.pk, predicate: row.p}}]->(o)
SET r.source_id = row.src, r.model = row.model, r.seq = row.seq
"""
KEY_OLD_RELATIONS = f"""
MATCH (s:{LABEL})-[r:{REL_TYPE}]->(o:{LABEL}) WHERE r.key IS NULL
WITH s, r, o LIMIT 10000
SET r.key = s.key + $sep + r.predicate_key + $sep + o.key
RETURN count(r) AS n
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
    """A :class:`~biorag.kg.stores.interfaces.KGStore` in a Neo4j database."""

    schema = SCHEMA

    def __init__(
        self, uri: str, *, batch_size: int = 1000, **connection: Unpack[Neo4jConnection]
    ) -> None:
        super().__init__(uri, **connection)
        self.batch_size = max(1, int(batch_size))
        self._next_entity = self._max_seq(f"MATCH (e:{LABEL}) RETURN max(e.seq) AS m") + 1
        self._next_rel = self._max_seq(f"MATCH ()-[r:{REL_TYPE}]->() RETURN max(r.seq) AS m") + 1
        while True:  # relations written by an older biorag, without ``key``
            records, _ = self._run(KEY_OLD_RELATIONS, sep=SEP)
            if not records or not records[0]["n"]:
                break

    # -- writes ----------------------------------------------------------------------------
    def add_triplets(self, triplets: Iterable[Triplet]) -> AddReport:
        """Store the valid triplets in batches of ``batch_size`` (see the module docstring; one
        transaction per query, so a batch cut short is completed by writing it again)."""
        report = AddReport()
        prepared = prepare_triplets(triplets, report)
        while batch := list(islice(prepared, self.batch_size)):
            entities: dict[str, str] = {}
            rels: dict[str, dict[str, Any]] = {}
            for _, t in batch:
                entities.setdefault(t.subject_key, t.subject)
                entities.setdefault(t.object_key, t.object)
                k = SEP.join((t.subject_key, t.predicate_key, t.object_key))
                if k not in rels:
                    rels[k] = {"key": k, "s": t.subject_key, "pk": t.predicate_key}
                    rels[k].update(o=t.object_key, p=t.predicate, src=t.source_id, model=t.model)
            rows = [
                {"key": k, "name": n, "seq": self._next_entity + i}
                for i, (k, n) in enumerate(entities.items())
            ]
            self._run(MERGE_ENTITIES, rows=rows)
            self._next_entity += len(rows)
            found, _ = self._run(EXISTING_RELATIONS, keys=list(rels))
            there = {r["key"] for r in found}
            new = [r for k, r in rels.items() if k not in there]
            for i, r in enumerate(new):
                r["seq"] = self._next_rel + i
            created = 0
            if new:
                _, summary = self._run(CREATE_RELATIONS, rows=new)
                created = int(summary.counters.relationships_created)
            self._next_rel += len(new)
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
        keys = lookup_keys(names, direction)
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
