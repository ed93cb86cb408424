"""The Neo4j typed store without a server: an in-memory fake driver, the Cypher it is sent.

:class:`FakeNeo4jServer` stands in for the ``neo4j`` module: it records every query with its
parameters and answers the typed store's named queries (``// biorag:NAME``) from Python dicts,
checking along the way that the query text carries the pieces the answer depends on (the type
label, the filters). It also keeps what the flat store (:mod:`biorag.kg.stores.flat_neo4j`)
MERGEs, so builds can run on it end to end. Real Cypher runs only in the live tests of
test_typed_store_contract.py (``BIORAG_NEO4J_URI``).
"""

from __future__ import annotations

import re
import sys
import types
from collections import Counter
from typing import Any

import pytest

from biorag.errors import BioragError
from biorag.kg.stores import flat_neo4j
from biorag.kg.stores.factory import open_typed_store
from biorag.kg.stores.typed_neo4j import SCHEMA, Neo4jTypedStore

TAG = re.compile(r"// biorag:(\w+)\n")


class FakeNeo4jServer:
    """An in-memory graph answering the queries of the Neo4j stores (see the module docstring)."""

    def __init__(self) -> None:
        self.nodes: dict[str, dict[str, Any]] = {}  # uid -> properties
        self.labels: dict[str, tuple[str, ...]] = {}
        self.rels: list[dict[str, Any]] = []
        self.flat_entities: dict[str, str] = {}
        self.flat_rels: dict[tuple[str, str, str], dict[str, Any]] = {}
        self.queries: list[tuple[str, dict[str, Any]]] = []
        self.auth: Any = None

    def module(self) -> Any:
        return types.SimpleNamespace(
            GraphDatabase=types.SimpleNamespace(driver=self._driver),
            RoutingControl=types.SimpleNamespace(READ="r", WRITE="w"),
        )

    def install(self, monkeypatch: pytest.MonkeyPatch) -> FakeNeo4jServer:
        monkeypatch.setitem(sys.modules, "neo4j", self.module())
        return self

    def _driver(self, uri: str, auth: Any = None) -> FakeNeo4jServer:
        self.auth = auth
        return self

    def verify_connectivity(self) -> None:
        pass

    def close(self) -> None:
        pass

    def execute_query(
        self, query: str, parameters: dict[str, Any] | None = None, **kw: Any
    ) -> tuple[list[dict[str, Any]], Any, list[str]]:
        p = dict(parameters or {})
        self.queries.append((query, p))
        created = Counter({"nodes_created": 0, "relationships_created": 0})
        if query.startswith("CREATE"):
            records: list[dict[str, Any]] = []
        elif m := TAG.match(query):
            records = getattr(self, f"_q_{m.group(1)}")(query, p, created)
        else:
            records = self._flat(query, p, created)
        summary = types.SimpleNamespace(counters=types.SimpleNamespace(**created))
        return records, summary, []

    # -- the typed store's queries --------------------------------------------------------
    def _q_max_node_seq(self, q: str, p: dict, c: Counter) -> list[dict]:
        return [{"m": max((n["seq"] for n in self.nodes.values()), default=None)}]

    def _q_max_edge_seq(self, q: str, p: dict, c: Counter) -> list[dict]:
        return [{"m": max((r["seq"] for r in self.rels), default=None)}]

    def _q_upsert_node(self, q: str, p: dict, c: Counter) -> list[dict]:
        label = re.search(r"MERGE \(n:StrataNode:(\w+) \{uid: \$uid\}\)", q).group(1)
        assert label == p["type"] and p["uid"] == f"{label}:{p['key']}"
        if p["uid"] not in self.nodes:
            keys = ("uid", "type", "key", "name", "vocab_id", "attrs", "seq")
            props = {k: p[k] for k in keys if p[k] is not None}  # null = no property
            self.nodes[p["uid"]] = {**props, "aliases": []}
            self.labels[p["uid"]] = ("StrataNode", label)
            c["nodes_created"] += 1
        n = self.nodes[p["uid"]]
        return [{"attrs": n.get("attrs"), "vocab_id": n.get("vocab_id")}]

    def _q_update_node(self, q: str, p: dict, c: Counter) -> list[dict]:
        n = self.nodes[p["uid"]]
        n["attrs"] = p["attrs"]
        if n.get("vocab_id") is None and p["vocab_id"] is not None:
            n["vocab_id"] = p["vocab_id"]
        return []

    def _q_add_aliases(self, q: str, p: dict, c: Counter) -> list[dict]:
        n = self.nodes.get(p["uid"])
        if n is None:
            return []
        n["aliases"] = n["aliases"] + [a for a in p["aliases"] if a not in n["aliases"]]
        return [{"uid": p["uid"]}]

    def _q_add_edge(self, q: str, p: dict, c: Counter) -> list[dict]:
        if p["src"] not in self.nodes or p["dst"] not in self.nodes:
            return []
        key = (p["src"], p["dst"], p["type"], p["pid"])
        for r in self.rels:
            if (r["src"], r["dst"], r["type"], r["source_pid"]) == key:
                return [{"seq": r["seq"]}]
        self.rels.append(dict(zip(("src", "dst", "type", "source_pid"), key, strict=True)))
        self.rels[-1]["seq"] = p["seq"]
        c["relationships_created"] += 1
        return [{"seq": p["seq"]}]

    def _q_node(self, q: str, p: dict, c: Counter) -> list[dict]:
        n = self.nodes.get(p["uid"])
        return [{"node": dict(n)}] if n else []

    def _labelled(self, q: str) -> list[dict[str, Any]]:
        label = re.search(r"MATCH \(n:StrataNode(?::(\w+))?\)", q).group(1)
        found = [n for uid, n in self.nodes.items() if label in (None, *self.labels[uid])]
        return sorted(found, key=lambda n: n["seq"])

    def _q_find_nodes(self, q: str, p: dict, c: Counter) -> list[dict]:
        name, k = p["name"], p["k"]
        return [
            {"node": dict(n)}
            for n in self._labelled(q)
            if n["name"].lower() == name.lower()
            or n["key"] in (name, k)
            or n.get("vocab_id") == name
            or k in n["aliases"]
        ]

    def _q_nodes(self, q: str, p: dict, c: Counter) -> list[dict]:
        return [{"node": dict(n)} for n in self._labelled(q)]

    def _q_edges(self, q: str, p: dict, c: Counter) -> list[dict]:
        for name, piece in (("src", "{uid: $src}"), ("dst", "{uid: $dst}"), ("type", "{type:")):
            assert (name in p) == (piece in q), (name, q)  # only the given filters appear
        rels = [r for r in self.rels if all(r[k] == p[k] for k in ("src", "dst", "type") if k in p)]
        keys = ("src", "dst", "type", "source_pid")
        return [{k: r[k] for k in keys} for r in sorted(rels, key=lambda r: r["seq"])]

    def _q_count_nodes(self, q: str, p: dict, c: Counter) -> list[dict]:
        counts = Counter(n["type"] for n in self.nodes.values())
        return [{"type": t, "n": n} for t, n in counts.items()]

    def _q_count_edges(self, q: str, p: dict, c: Counter) -> list[dict]:
        return [{"type": t, "n": n} for t, n in Counter(r["type"] for r in self.rels).items()]

    def _q_clear(self, q: str, p: dict, c: Counter) -> list[dict]:
        self.nodes.clear()
        self.labels.clear()
        self.rels.clear()
        return []

    # -- the flat store's writes (enough for a build's projection) -------------------------
    def _flat(self, q: str, p: dict, c: Counter) -> list[dict]:
        if q == flat_neo4j.MERGE_ENTITIES:
            for row in p["rows"]:
                self.flat_entities.setdefault(row["key"], row["name"])
        elif q == flat_neo4j.EXISTING_RELATIONS:
            have = {flat_neo4j.SEP.join(k) for k in self.flat_rels}
            return [{"key": k} for k in p["keys"] if k in have]
        elif q == flat_neo4j.CREATE_RELATIONS:
            for row in p["rows"]:
                k = (row["s"], row["pk"], row["o"])
                assert k not in self.flat_rels, f"a relation created twice: {k}"
                self.flat_rels[k] = row
                c["relationships_created"] += 1
        elif q == flat_neo4j.KEY_OLD_RELATIONS:
            return [{"n": 0}]
        elif "max(" in q:
            return [{"m": None}]
        else:
            raise AssertionError(f"the fake does not know this query: {q}")
        return []


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> FakeNeo4jServer:
    return FakeNeo4jServer().install(monkeypatch)


def _sent(server: FakeNeo4jServer, name: str) -> list[tuple[str, dict[str, Any]]]:
    return [(q, p) for q, p in server.queries if q.startswith(f"// biorag:{name}\n")]


def test_missing_driver_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "neo4j", None)  # import neo4j -> ImportError
    with pytest.raises(BioragError, match=r"biorag\[neo4j\]"):
        open_typed_store("bolt://localhost:7687", "neo4j")


def test_connection_error_names_uri_never_password(monkeypatch: pytest.MonkeyPatch) -> None:
    def driver(uri: str, auth: Any = None) -> Any:
        raise OSError(f"Couldn't connect to {uri}")

    fake = types.SimpleNamespace(
        GraphDatabase=types.SimpleNamespace(driver=driver),
        RoutingControl=types.SimpleNamespace(READ="r", WRITE="w"),
    )
    monkeypatch.setitem(sys.modules, "neo4j", fake)
    monkeypatch.setenv("MY_KG_PASSWORD", "s3cret-pw")
    with pytest.raises(BioragError) as err:
        open_typed_store("bolt://kg.example:7687", "neo4j", password_env="MY_KG_PASSWORD")
    assert "bolt://kg.example:7687" in str(err.value) and "s3cret-pw" not in str(err.value)


def test_schema_auth_and_labels(server: FakeNeo4jServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BIORAG_NEO4J_PASSWORD", "pw")
    store = open_typed_store("bolt://x:7687", "neo4j", user="bob", database="strata")
    assert server.auth == ("bob", "pw") and "pw" not in repr(store)
    sent = [q for q, _ in server.queries]
    assert sent[: len(SCHEMA)] == list(SCHEMA)
    assert "REQUIRE n.uid IS UNIQUE" in SCHEMA[0]
    nasty = "x'}) DETACH DELETE n //"
    gid = store.upsert_node("Gene", "erbb2", nasty, "GENE:ERBB2", {"a": 1})
    assert gid == "Gene:erbb2"
    q, params = _sent(server, "upsert_node")[-1]
    assert "MERGE (n:StrataNode:Gene {uid: $uid})" in q and nasty not in q
    assert params["name"] == nasty and params["attrs"] == '{"a": 1}'
    store.add_aliases(gid, ["HER2", "her2 ", "NEU"])
    assert server.nodes[gid]["aliases"] == ["her2", "neu"]
    assert [n["id"] for n in store.find_nodes("Gene", "her2")] == [gid]
    assert "MATCH (n:StrataNode:Gene)\n" in _sent(server, "find_nodes")[-1][0]
    store.find_nodes(None, "her2")
    assert "MATCH (n:StrataNode)\n" in _sent(server, "find_nodes")[-1][0]


def test_bad_labels_never_reach_the_server(server: FakeNeo4jServer) -> None:
    store = open_typed_store("bolt://x:7687", "neo4j")
    before = len(server.queries)
    for bad in ("gene", "Gene) DETACH DELETE (n", "Gene:Drug", "", "Gène"):
        with pytest.raises(BioragError, match="not a valid label"):
            store.upsert_node(bad, "k", "name")
        with pytest.raises(BioragError, match="not a valid label"):
            store.find_nodes(bad, "name")
        with pytest.raises(BioragError, match="not a valid label"):
            store.nodes(bad)
    a = store.upsert_node("Drug", "a", "A")
    with pytest.raises(BioragError, match="edge type"):
        store.add_edge(a, a, "TREATS]->() DELETE r //")
    assert len(server.queries) == before + 1  # only the good upsert was sent


def test_edges_query_has_only_the_given_filters(server: FakeNeo4jServer) -> None:
    store = open_typed_store("bolt://x:7687", "neo4j")
    a, b = store.upsert_node("Drug", "a", "A"), store.upsert_node("Disease", "b", "B")
    assert store.add_edge(a, b, "TREATS", "P1") and not store.add_edge(a, b, "TREATS", "P1")
    store.edges()
    store.edges(src=a)
    store.edges(dst=b, type_="TREATS")
    queries = [q for q, _ in _sent(server, "edges")]
    assert "MATCH (s:StrataNode)-[r:STRATA_EDGE]->(d:StrataNode)" in queries[0]
    assert "(s:StrataNode {uid: $src})-[r:STRATA_EDGE]->(d:StrataNode)" in queries[1]
    assert "-[r:STRATA_EDGE {type: $type}]->(d:StrataNode {uid: $dst})" in queries[2]


def test_seq_goes_on_after_reopening(server: FakeNeo4jServer) -> None:
    first = Neo4jTypedStore("bolt://x:7687")
    a, b = first.upsert_node("Drug", "a", "A"), first.upsert_node("Disease", "b", "B")
    first.add_edge(a, b, "TREATS", "P1")
    first.close()
    again = Neo4jTypedStore("bolt://x:7687")
    c = again.upsert_node("Drug", "c", "C")
    again.add_edge(c, b, "TREATS", "P2")
    assert server.nodes[c]["seq"] == 2 and [r["seq"] for r in server.rels] == [0, 1]
    assert [n["name"] for n in again.nodes()] == ["A", "B", "C"]
    again.clear()
    assert again.counts() == ({}, {})
