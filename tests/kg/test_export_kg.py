"""Exports parse back: neo4j-admin CSV headers exact, GraphML through networkx, JSON lines."""

from __future__ import annotations

import csv
import json

import networkx as nx
import pytest

from biorag.errors import BioragError
from biorag.kg import Triplet, export_kg, normalize_key, open_store
from biorag.kg.stores.interfaces import KGStore

TRIPLETS = [
    Triplet(subject="Vitamin C", predicate="prevents", object="Scurvy", source_id="q1", model="m"),
    Triplet(subject="vitamin c", predicate="is an", object="antioxidant", source_id="q2"),
    Triplet(subject='Ringer\'s "lactate"', predicate="contains, a.o.", object="Sodium"),
    Triplet(subject="Scurvy", predicate="causes", object="bleeding gums", model="rule-based"),
]


@pytest.fixture
def store(tmp_path) -> KGStore:
    s = open_store(tmp_path / "kg")
    s.add_triplets(TRIPLETS)
    return s


def _rows(path) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


def test_neo4j_csv(store: KGStore, tmp_path) -> None:
    files = export_kg(store, "neo4j-csv", tmp_path / "neo4j")
    assert [f.name for f in files] == ["entities.csv", "relations.csv"]
    nodes, rels = _rows(files[0]), _rows(files[1])
    assert files[0].read_text(encoding="utf-8").splitlines()[0] == "key:ID(Entity),name,:LABEL"
    assert files[1].read_text(encoding="utf-8").splitlines()[0] == (
        ":START_ID(Entity),:END_ID(Entity),:TYPE,predicate,source_id,model"
    )
    assert nodes[1:] == [[normalize_key(n), n, "Entity"] for n in store.entities()]
    assert len({r[0] for r in nodes[1:]}) == len(nodes) - 1  # ids unique
    ids = {r[0] for r in nodes[1:]}
    assert all(r[0] in ids and r[1] in ids for r in rels[1:])
    assert rels[1:] == [
        [
            normalize_key(t.subject),
            normalize_key(t.object),
            "RELATION",
            t.predicate,
            t.source_id,
            t.model,
        ]
        for t in store.iter_triplets()
    ]
    assert rels[3][3] == "contains, a.o." and nodes[4][1] == 'Ringer\'s "lactate"'
    with pytest.raises(BioragError, match="directory"):
        export_kg(store, "neo4j-csv", files[0])


def test_graphml(store: KGStore, tmp_path) -> None:
    (path,) = export_kg(store, "graphml", tmp_path / "kg.graphml")
    g = nx.read_graphml(path, force_multigraph=True)
    assert isinstance(g, nx.MultiDiGraph)
    assert g.number_of_nodes() == store.count_entities() == 6
    assert g.number_of_edges() == store.count_triplets() == 4
    assert g.nodes["vitamin c"]["name"] == "Vitamin C"
    edges = list(g.edges(keys=True, data=True))
    assert edges[0][:3] == ("vitamin c", "scurvy", "t0")
    assert {d["predicate"] for *_, d in edges} == {t.predicate for t in TRIPLETS}
    assert [d["source_id"] for u, v, k, d in edges if u == "vitamin c"] == ["q1", "q2"]


def test_jsonl_and_directory_targets(store: KGStore, tmp_path) -> None:
    out = tmp_path / "exports"
    out.mkdir()
    (path,) = export_kg(store, "jsonl", out)
    assert path == out / "triplets.jsonl"
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [Triplet.model_validate_json(line) for line in lines] == list(store.iter_triplets())
    assert set(json.loads(lines[0])) == {"subject", "predicate", "object", "source_id", "model"}
    (gml,) = export_kg(store, "graphml", out)
    assert gml == out / "kg.graphml"
    assert sorted(p.name for p in out.iterdir()) == ["kg.graphml", "triplets.jsonl"]


def test_from_a_list_and_bad_format(tmp_path) -> None:
    files = export_kg(TRIPLETS[:2], "neo4j-csv", tmp_path / "csv")
    assert [r[1] for r in _rows(files[0])[1:]] == ["Vitamin C", "Scurvy", "antioxidant"]
    with pytest.raises(BioragError, match="format"):
        export_kg(TRIPLETS, "rdf", tmp_path / "x")  # type: ignore[arg-type]
