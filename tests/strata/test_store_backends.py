"""BioStrataKG in the shared store: the same build on SQLite and (fake) Neo4j, and the entity
level projected into the flat VectorGraphRAG store of the same directory."""

from __future__ import annotations

import json

import pytest
from tests.kg.test_typed_store_neo4j import FakeNeo4jServer

from biorag.errors import BioragError
from biorag.kg import Triplet, open_store, open_typed_store
from biorag.kg.directory import kg_stats
from biorag.kg.stores.interfaces import TypedGraphStore
from biorag.strata import build_strata
from biorag.strata.build import entity_triplets
from biorag.strata.queries import (
    drugs_for_disease,
    gene_disease_chains,
    methods_datasets_of_domain,
    papers_by_domain,
    related_papers,
)


def _answers(store: TypedGraphStore) -> dict:
    return {
        "drugs": drugs_for_disease(store, "breast cancer"),
        "drugs_t2d": drugs_for_disease(store, "T2D"),
        "chains": gene_disease_chains(store, "HER2"),
        "papers": papers_by_domain(store, "onco"),
        "methods": methods_datasets_of_domain(store, "oncology"),
        "related": related_papers(store, "P1"),
    }


def test_projection_into_the_flat_store(tmp_path, vocab, emb, papers) -> None:
    out = tmp_path / "kg"
    rep = build_strata(papers, None, emb, vocab, out)
    assert rep.db_path == str(out / "kg.sqlite") and rep.backend == "sqlite"
    flat = open_store(out)
    try:
        got = list(flat.iter_triplets())
        assert flat.count_triplets() == rep.flat_triplets_added > 0
    finally:
        flat.close()
    assert (
        Triplet(
            subject="Trastuzumab",
            predicate="treats",
            object="Breast Neoplasms",
            source_id="P1",
            model="rule-based",
        )
        in got
    )
    assert ("TP53", "associated with", "Breast Neoplasms") in {
        (t.subject, t.predicate, t.object) for t in got
    }
    preds = {t.predicate for t in got}
    assert not preds & {"mentions", "uses method", "uses dataset", "in domain", "cites"}
    assert {t.source_id for t in got} <= {"P1", "P2", "P3"}
    stats = kg_stats(out)  # what biorag kg stats --kg OUT shows
    assert stats["triplets"] == rep.flat_triplets_added
    assert stats["entity_index"]["indexed"] == rep.flat_entities_embedded == stats["entities"]
    assert stats["entity_index"]["not_indexed"] == 0
    saved = json.loads((out / "build_report.json").read_text())
    assert saved["flat_triplets_added"] == rep.flat_triplets_added
    assert "--kg" in saved["vectorgraphrag"]
    again = build_strata(papers, None, emb, vocab, out)  # a rebuild adds nothing new
    assert again.flat_triplets_added == 0
    assert again.flat_triplets_duplicates == rep.flat_triplets_added
    assert again.nodes == rep.nodes and again.edges == rep.edges


def test_projection_names_the_llm_model(tmp_path, vocab, emb, papers, mock_llm) -> None:
    trip = [{"subject": "Herceptin", "subject_type": "Drug", "relation": "treats",
             "object": "breast cancer", "object_type": "Disease"}]  # fmt: skip
    llm = mock_llm([
        {"stage": "strata_triplets", "response": trip},
        {"stage": "strata_doc", "response": {"methods": [], "datasets": [], "domains": []}},
    ])  # fmt: skip
    out = tmp_path / "kg"
    rep = build_strata(papers[:2], llm, emb, vocab, out)
    assert rep.flat_triplets_added == 1 and rep.flat_triplets_duplicates == 1  # P1 and P2
    flat = open_store(out)
    (t,) = list(flat.iter_triplets())
    flat.close()
    assert (t.subject, t.predicate, t.object) == ("Trastuzumab", "treats", "Breast Neoplasms")
    assert t.model == llm.model and t.model.startswith("mock-") and t.source_id == "P1"
    with open_typed_store(out) as s:
        models = {"P2": "m2"}  # only the papers given are projected, with their model
        assert [(x.source_id, x.model) for x in entity_triplets(s, models)] == [("P2", "m2")]


def test_same_graph_and_answers_on_neo4j(tmp_path, vocab, emb, papers, monkeypatch) -> None:
    sql = build_strata(papers, None, emb, vocab, tmp_path / "a")
    server = FakeNeo4jServer().install(monkeypatch)
    neo = build_strata(
        papers, None, emb, vocab, tmp_path / "b", backend="neo4j", uri="bolt://fake:7687"
    )
    assert neo.db_path == "bolt://fake:7687" and neo.backend == "neo4j"
    assert (neo.nodes, neo.edges, neo.triplets) == (sql.nodes, sql.edges, sql.triplets)
    assert neo.flat_triplets_added == sql.flat_triplets_added == len(server.flat_rels)
    assert neo.flat_entities_embedded is None  # no entity index for a server store
    assert ("trastuzumab", "treats", "breast neoplasms") in server.flat_rels
    assert (tmp_path / "b" / "build_report.json").is_file()
    assert not (tmp_path / "b" / "kg.sqlite").exists()
    assert all(server.labels[uid] == ("StrataNode", n["type"]) for uid, n in server.nodes.items())
    types_ = {n["type"] for n in server.nodes.values()}
    assert {"Paper", "Gene", "Drug", "Disease", "Method", "Dataset", "Domain"} <= types_
    with open_typed_store(tmp_path / "a") as a, open_typed_store("bolt://x", "neo4j") as b:
        got_a, got_b = _answers(a), _answers(b)
    assert got_a == got_b
    assert got_a["drugs"][0]["drug"] == "Trastuzumab" and got_a["papers"]
    assert any(c["path"][-1] == "Breast Neoplasms" for c in got_a["chains"])


def test_build_backend_errors(tmp_path, vocab, emb, papers) -> None:
    with pytest.raises(BioragError, match="needs the server URI"):
        build_strata(papers, None, emb, vocab, tmp_path / "k", backend="neo4j")
    with pytest.raises(BioragError, match="unknown knowledge-graph backend 'mysql'"):
        build_strata(papers, None, emb, vocab, tmp_path / "k", backend="mysql")  # type: ignore[arg-type]
    (tmp_path / "f").write_text("x")
    with pytest.raises(BioragError, match="is a file"):
        build_strata(papers, None, emb, vocab, tmp_path / "f")
