"""The TypedGraphStore contract, run on every backend.

SQLite always; Neo4j on the in-memory fake driver of test_typed_store_neo4j.py always; and on the
live server of the ``neo4j_live`` fixture (tests/graph_server.py: ``BIORAG_NEO4J_URI`` when set,
else ArcadeDB embedded started for the session). The live run DELETES every ``StrataNode`` of
that database before each test: point ``BIORAG_NEO4J_URI`` at a throwaway server.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator

import pytest
from tests.kg.test_typed_store_neo4j import FakeNeo4jServer

from biorag.errors import BioragError
from biorag.kg import Triplet, TypedGraphStore, node_key, open_store, open_typed_store


@pytest.fixture(params=["sqlite", "neo4j-fake", "neo4j-live"])
def store(request: pytest.FixtureRequest, tmp_path, monkeypatch) -> Iterator[TypedGraphStore]:
    if request.param == "sqlite":
        s = open_typed_store(tmp_path / "kg")
    elif request.param == "neo4j-fake":
        FakeNeo4jServer().install(monkeypatch)
        s = open_typed_store("bolt://fake:7687", "neo4j")
    else:
        live = request.getfixturevalue("neo4j_live")
        s = open_typed_store(live.uri, "neo4j", **live.kw)
        s.clear()  # type: ignore[attr-defined]
    yield s
    s.close()


def test_is_a_typed_graph_store(store: TypedGraphStore) -> None:
    assert isinstance(store, TypedGraphStore)


def test_duplicate_node_merges_by_type_and_key(store: TypedGraphStore) -> None:
    a = store.upsert_node("Disease", "mesh:d003924", "Diabetes Mellitus, Type 2")
    b = store.upsert_node("Disease", "mesh:d003924", "type 2 diabetes", "MESH:D003924", {"x": 1})
    c = store.upsert_node("Disease", "mesh:d003924", "T2D", "MESH:OTHER", {"y": 2, "x": 3})
    assert a == b == c and hash(a) == hash(c)
    node = store.node(a)
    assert node["name"] == "Diabetes Mellitus, Type 2"  # the first name is kept
    assert node["vocab_id"] == "MESH:D003924"  # filled once, never overwritten
    assert node["attrs"] == {"x": 3, "y": 2} and node["type"] == "Disease"
    assert node["key"] == "mesh:d003924" and node["id"] == a
    assert store.counts() == ({"Disease": 1}, {})
    assert store.node(store.upsert_node("Drug", "other", "Other")) != node
    assert store.node("Drug:missing" if isinstance(a, str) else 99_999) == {}


def test_same_surface_under_two_types_is_two_nodes(store: TypedGraphStore) -> None:
    gene = store.upsert_node("Gene", "cad", "CAD", "GENE:CAD")
    disease = store.upsert_node("Disease", "cad", "CAD")
    assert gene != disease
    assert {n["type"] for n in store.find_nodes(None, "cad")} == {"Gene", "Disease"}
    assert [n["id"] for n in store.find_nodes("Gene", "CAD")] == [gene]
    assert [n["id"] for n in store.find_nodes("Disease", "CAD")] == [disease]
    assert [n["name"] for n in store.nodes("Gene")] == ["CAD"]
    assert [n["type"] for n in store.nodes()] == ["Gene", "Disease"]  # insertion order
    assert store.counts()[0] == {"Gene": 1, "Disease": 1}


def test_one_edge_per_paper(store: TypedGraphStore) -> None:
    drug = store.upsert_node("Drug", "mesh:d068877", "Trastuzumab")
    dis = store.upsert_node("Disease", "mesh:d001943", "Breast Neoplasms")
    paper = store.upsert_node("Paper", "P1", "A paper")
    assert store.add_edge(drug, dis, "TREATS", "P1") is True
    assert store.add_edge(drug, dis, "TREATS", "P1") is False  # the same paper again: merged
    assert store.add_edge(drug, dis, "TREATS", "P2") is True  # another paper: its own edge
    assert store.add_edge(drug, dis, "PREVENTS", "P1") is True
    assert store.add_edge(drug, dis, "TREATS") is True and not store.add_edge(drug, dis, "TREATS")
    store.add_edge(paper, drug, "MENTIONS", "P1")
    treats = store.edges(src=drug, dst=dis, type_="TREATS")
    assert [e["source_pid"] for e in treats] == ["P1", "P2", ""]
    assert treats[0] == {"src": drug, "dst": dis, "type": "TREATS", "source_pid": "P1"}
    assert len(store.edges(src=drug)) == 4 and len(store.edges(dst=dis)) == 4
    assert [e["type"] for e in store.edges(dst=drug)] == ["MENTIONS"]
    assert store.edges(src=dis) == [] and len(store.edges()) == 5
    assert store.counts()[1] == {"TREATS": 3, "PREVENTS": 1, "MENTIONS": 1}
    store.commit()


def test_edge_to_unknown_node_is_an_error(store: TypedGraphStore) -> None:
    drug = store.upsert_node("Drug", "a", "A")
    missing = "Drug:missing" if isinstance(drug, str) else 99_999
    with pytest.raises(ValueError, match="no node"):
        store.add_edge(drug, missing, "TREATS", "P1")
    with pytest.raises(ValueError, match="no node"):
        store.add_aliases(missing, ["x"])
    assert store.edges() == []


def test_alias_and_other_lookups(store: TypedGraphStore) -> None:
    nid = store.upsert_node("Disease", "mesh:d003924", "Diabetes Mellitus, Type 2", "MESH:D003924")
    store.add_aliases(nid, ["Type 2  Diabetes", "T2D", " ", "t2d"])
    store.add_aliases(nid, ["T2D"])  # again: ignored
    other = store.upsert_node("Disease", "mesh:d003324", "Coronary Artery Disease")
    for name in ("type 2 diabetes", "T2D", "diabetes mellitus, TYPE 2", "MESH:D003924"):
        assert [n["id"] for n in store.find_nodes("Disease", name)] == [nid], name
    assert [n["id"] for n in store.find_nodes(None, "mesh:d003324")] == [other]  # by key
    assert store.find_nodes("Drug", "T2D") == [] and store.find_nodes(None, "diabetes") == []
    assert node_key("  Type 2\tDiabetes ") == "type 2 diabetes"


def test_bad_type_label_is_rejected(store: TypedGraphStore) -> None:
    for bad in ("gene", "Gene) DETACH DELETE (n", "Gene:Drug", "", "Two Words"):
        with pytest.raises(BioragError, match="not a valid label"):
            store.upsert_node(bad, "k", "name")
        with pytest.raises(BioragError, match="not a valid label"):
            store.find_nodes(bad, "name")
    a = store.upsert_node("Drug", "a", "A")
    with pytest.raises(BioragError, match="edge type 'treats; x' is not a valid label"):
        store.add_edge(a, a, "treats; x", "P1")
    assert store.counts() == ({"Drug": 1}, {})


# -- SQLite specifics ----------------------------------------------------------------------
def test_sqlite_shares_kg_sqlite_with_the_flat_store(tmp_path) -> None:
    d = tmp_path / "kg"
    flat = open_store(d)
    flat.add_triplets([Triplet(subject="a", predicate="p", object="b", source_id="q1")])
    flat.close()
    with open_typed_store(d) as typed:
        assert str(typed.path) == str(d / "kg.sqlite")  # type: ignore[attr-defined]
        x = typed.upsert_node("Gene", "x", "X")
        typed.add_edge(x, x, "ACTIVATES", "P1")
    with open_typed_store(d / "kg.sqlite") as again:  # the file itself works too; close commits
        assert again.counts() == ({"Gene": 1}, {"ACTIVATES": 1})
    con = sqlite3.connect(d / "kg.sqlite")
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"entities", "triplets", "typed_nodes", "typed_edges", "typed_aliases"} <= tables
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    con.close()
    flat = open_store(d)
    assert flat.count_triplets() == 1 and flat.entities() == ["a", "b"]
    flat.close()


def test_sqlite_in_memory_and_unopenable_path(tmp_path) -> None:
    with open_typed_store(":memory:") as mem:
        mem.upsert_node("Paper", "P1", "t")
        assert mem.counts()[0] == {"Paper": 1}
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(BioragError, match=r"cannot open the knowledge graph .*file.*kg\.sqlite"):
        open_typed_store(blocker / "sub")
    with pytest.raises(BioragError, match="cannot open the knowledge graph"):
        open_typed_store(blocker)  # a file that is no SQLite database


def test_unknown_backend(tmp_path) -> None:
    with pytest.raises(BioragError, match="unknown knowledge-graph backend 'neo5j'"):
        open_typed_store(tmp_path, "neo5j")  # type: ignore[arg-type]
