"""The Neo4j typed-graph store (BioStrataKG) through the official driver.

Graph model:

* every node has the label ``StrataNode`` plus its type as a second label (``:StrataNode:Gene``;
  the type is checked against ``^[A-Z][A-Za-z0-9_]*$`` before it is put into the query text,
  since labels cannot be parameters). Properties: ``uid`` = ``"Type:key"`` (the node id and the
  merge key; the uniqueness constraint ``biorag_strata_uid`` is on it, so ``(type, key)`` is
  unique), ``type``, ``key``, ``name``, ``vocab_id``, ``attrs`` (a JSON string), ``aliases`` (a
  list of lower-cased surface forms) and ``seq`` (insertion order).
* ONE relationship type ``STRATA_EDGE`` with properties ``type`` (``TREATS``, ``MENTIONS``,
  ...), ``source_pid`` (the stating paper, ``''`` for none) and ``seq``. Writes ``MERGE`` on
  ``(src, dst, type, source_pid)``, so a duplicate merges and each paper keeps its own edge.

Why ``uid`` strings rather than client-counted integers: the id follows from ``(type, key)``,
so every client and every rerun agrees on it without reading it back, and the constraint that
makes nodes unique is the same index that looks ids up. The type never contains ``:``, so
``uid`` splits unambiguously. ``seq`` counters are kept by this client (they only order
listings), so one writer at a time is assumed, as in :mod:`biorag.kg.stores.flat_neo4j`.

Every write is one auto-committed query (:meth:`Neo4jTypedStore.commit` has nothing to do).
Alias and name lookups (:meth:`~Neo4jTypedStore.find_nodes`) scan the nodes of the asked type.
Each query starts with a ``// biorag:NAME`` comment naming it (for query logs and tests).
Connection conventions: :mod:`biorag.kg.stores.neo4j_common`. Needs ``pip install 'biorag[neo4j]'``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Unpack

from biorag.kg.stores.interfaces import (
    NodeId,
    StoredNode,
    TypedGraphStore,
    check_type,
    node_key,
    unique_aliases,
)
from biorag.kg.stores.neo4j_common import Neo4jClient, Neo4jConnection

LABEL, REL_TYPE = "StrataNode", "STRATA_EDGE"

SCHEMA = (
    f"CREATE CONSTRAINT biorag_strata_uid IF NOT EXISTS FOR (n:{LABEL}) REQUIRE n.uid IS UNIQUE",
    f"CREATE INDEX biorag_strata_seq IF NOT EXISTS FOR (n:{LABEL}) ON (n.seq)",
    f"CREATE INDEX biorag_strata_vocab IF NOT EXISTS FOR (n:{LABEL}) ON (n.vocab_id)",
    f"CREATE INDEX biorag_strata_edge_type IF NOT EXISTS FOR ()-[r:{REL_TYPE}]-() ON (r.type)",
)
MAX_NODE_SEQ = f"// biorag:max_node_seq\nMATCH (n:{LABEL}) RETURN max(n.seq) AS m"
MAX_EDGE_SEQ = f"// biorag:max_edge_seq\nMATCH ()-[r:{REL_TYPE}]->() RETURN max(r.seq) AS m"
UPDATE_NODE = f"""// biorag:update_node
MATCH (n:{LABEL} {{uid: $uid}})
SET n.attrs = $attrs, n.vocab_id = coalesce(n.vocab_id, $vocab_id)
"""
ADD_ALIASES = f"""// biorag:add_aliases
MATCH (n:{LABEL} {{uid: $uid}})
SET n.aliases = coalesce(n.aliases, []) + [a IN $aliases WHERE NOT a IN coalesce(n.aliases, [])]
RETURN n.uid AS uid
"""
ADD_EDGE = f"""// biorag:add_edge
MATCH (s:{LABEL} {{uid: $src}}), (d:{LABEL} {{uid: $dst}})
MERGE (s)-[r:{REL_TYPE} {{type: $type, source_pid: $pid}}]->(d)
ON CREATE SET r.seq = $seq
RETURN r.seq AS seq
"""
NODE = f"// biorag:node\nMATCH (n:{LABEL} {{uid: $uid}}) RETURN n{{.*}} AS node"
FIND_WHERE = (
    "WHERE toLower(n.name) = toLower($name) OR n.key IN [$name, $k] OR n.vocab_id = $name"
    " OR $k IN coalesce(n.aliases, [])"
)
COUNT_NODES = f"// biorag:count_nodes\nMATCH (n:{LABEL}) RETURN n.type AS type, count(*) AS n"
COUNT_EDGES = (
    f"// biorag:count_edges\nMATCH ()-[r:{REL_TYPE}]->() RETURN r.type AS type, count(*) AS n"
)
CLEAR = f"// biorag:clear\nMATCH (n:{LABEL}) DETACH DELETE n"


def node_uid(type_: str, key: str) -> str:
    """The Neo4j node id of ``(type_, key)``: ``"Type:key"`` (the type checked first)."""
    return f"{check_type(type_)}:{key}"


def upsert_query(type_: str) -> str:
    """The MERGE of one node with the (checked) type as its second label."""
    label = check_type(type_)
    return f"""// biorag:upsert_node
MERGE (n:{LABEL}:{label} {{uid: $uid}})
ON CREATE SET n.type = $type, n.key = $key, n.name = $name, n.vocab_id = $vocab_id,
    n.attrs = $attrs, n.aliases = [], n.seq = $seq
RETURN n.attrs AS attrs, n.vocab_id AS vocab_id
"""


def _labels(type_: str | None) -> str:
    return f"{LABEL}:{check_type(type_)}" if type_ is not None else LABEL


def find_query(type_: str | None) -> str:
    """Nodes (with the type's label) matched by name, key, vocabulary id or alias."""
    return f"// biorag:find_nodes\nMATCH (n:{_labels(type_)})\n{FIND_WHERE}\n" + (
        "RETURN n{.*} AS node ORDER BY n.seq"
    )


def nodes_query(type_: str | None) -> str:
    return f"// biorag:nodes\nMATCH (n:{_labels(type_)}) RETURN n{{.*}} AS node ORDER BY n.seq"


def edges_query(src: bool, dst: bool, type_: bool) -> str:
    """The edge listing; only the filters given appear (as parameters), so indexes are used."""
    s = f"(s:{LABEL} {{uid: $src}})" if src else f"(s:{LABEL})"
    d = f"(d:{LABEL} {{uid: $dst}})" if dst else f"(d:{LABEL})"
    r = f"[r:{REL_TYPE} {{type: $type}}]" if type_ else f"[r:{REL_TYPE}]"
    return (
        f"// biorag:edges\nMATCH {s}-{r}->{d}\n"
        "RETURN s.uid AS src, d.uid AS dst, r.type AS type, r.source_pid AS source_pid"
        " ORDER BY r.seq"
    )


def _node(props: Any) -> dict[str, Any]:
    p = dict(props)
    return {
        "id": p.get("uid"),
        "type": p.get("type"),
        "name": p.get("name"),
        "key": p.get("key"),
        "vocab_id": p.get("vocab_id"),
        "attrs": json.loads(p.get("attrs") or "{}"),
    }


class Neo4jTypedStore(Neo4jClient, TypedGraphStore):
    """A :class:`~biorag.kg.stores.interfaces.TypedGraphStore` in a Neo4j database."""

    schema = SCHEMA

    def __init__(self, uri: str, **connection: Unpack[Neo4jConnection]) -> None:
        super().__init__(uri, **connection)
        self._next_node = self._max_seq(MAX_NODE_SEQ) + 1
        self._next_edge = self._max_seq(MAX_EDGE_SEQ) + 1

    def commit(self) -> None:
        """Nothing to do: every write is its own auto-committed transaction."""

    def clear(self) -> None:
        """Delete every StrataNode and its edges (not part of the protocol)."""
        self._run(CLEAR)
        self._next_node = self._next_edge = 0

    # -- writes (upsert_node: TypedGraphStore's, through these two) ------------------------
    def _merge_node(
        self, type_: str, key: str, name: str, vocab_id: str | None, attrs: str
    ) -> tuple[NodeId, StoredNode | None]:
        uid = node_uid(type_, key)
        records, summary = self._run(
            upsert_query(type_),
            uid=uid,
            type=type_,
            key=key,
            name=name,
            vocab_id=vocab_id,
            attrs=attrs,
            seq=self._next_node,
        )
        if int(summary.counters.nodes_created):
            self._next_node += 1
            return uid, None
        old = records[0] if records else {"attrs": None, "vocab_id": None}
        return uid, StoredNode(old["attrs"], old["vocab_id"])

    def _update_node(self, node_id: NodeId, attrs: str, vocab_id: str | None) -> None:
        self._run(UPDATE_NODE, uid=node_id, attrs=attrs, vocab_id=vocab_id)

    def add_aliases(self, node_id: Any, aliases: Iterable[str]) -> None:
        keys = unique_aliases(aliases)
        if not keys:
            return
        records, _ = self._run(ADD_ALIASES, uid=node_id, aliases=keys)
        if not records:
            raise ValueError(f"add_aliases: no node with id {node_id!r}")

    def add_edge(self, src: Any, dst: Any, type_: str, source_pid: str = "") -> bool:
        """MERGE the edge; False when the same edge from the same paper is already there."""
        check_type(type_, "edge type")
        records, summary = self._run(
            ADD_EDGE, src=src, dst=dst, type=type_, pid=source_pid or "", seq=self._next_edge
        )
        if not records:
            raise ValueError(f"add_edge: no node with id {src!r} or {dst!r}")
        created = int(summary.counters.relationships_created) > 0
        self._next_edge += int(created)
        return created

    # -- reads -----------------------------------------------------------------------------
    def node(self, node_id: Any) -> dict[str, Any]:
        records, _ = self._run(NODE, read=True, uid=node_id)
        return _node(records[0]["node"]) if records else {}

    def find_nodes(self, type_: str | None, name: str) -> list[dict[str, Any]]:
        records, _ = self._run(find_query(type_), read=True, name=name, k=node_key(name))
        return [_node(r["node"]) for r in records]

    def nodes(self, type_: str | None = None) -> list[dict[str, Any]]:
        records, _ = self._run(nodes_query(type_), read=True)
        return [_node(r["node"]) for r in records]

    def edges(
        self, src: Any = None, dst: Any = None, type_: str | None = None
    ) -> list[dict[str, Any]]:
        params = {k: v for k, v in (("src", src), ("dst", dst), ("type", type_)) if v is not None}
        query = edges_query(src is not None, dst is not None, type_ is not None)
        records, _ = self._run(query, read=True, **params)
        return [
            {"src": r["src"], "dst": r["dst"], "type": r["type"], "source_pid": r["source_pid"]}
            for r in records
        ]

    def counts(self) -> tuple[dict[str, int], dict[str, int]]:
        nodes, _ = self._run(COUNT_NODES, read=True)
        edges, _ = self._run(COUNT_EDGES, read=True)
        return (
            {r["type"]: int(r["n"]) for r in nodes},
            {r["type"]: int(r["n"]) for r in edges},
        )
