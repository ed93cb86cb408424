"""The Neo4j code against a live Bolt/openCypher server (the ``neo4j_live`` fixture): ``kg push``
(batched, interrupted, resumed without duplicates), and VectorGraphRAG reading triplets from the
server. Each test empties the server first (BioStrataKG on the live server:
tests/strata/test_strata_neo4j_live.py)."""

from __future__ import annotations

import json

import pytest
from tests.kg.test_retrieval import OPTIONS, QUESTION, TABLE, TRIPLETS, DictEmbedder

from biorag.cli.kg_cmd import app as kg_app
from biorag.errors import BioragError
from biorag.kg import Triplet, open_store, open_typed_store
from biorag.kg.push import CHECKPOINT, push_kg
from biorag.kg.stores.flat_neo4j import Neo4jKGStore
from biorag.methods.vectorgraphrag import VectorGraphRAG, _open_retriever


def T(s: str, p: str, o: str, src: str = "") -> Triplet:
    return Triplet(subject=s, predicate=p, object=o, source_id=src)


def _server(live) -> Neo4jKGStore:
    return Neo4jKGStore(live.uri, **live.kw)


@pytest.fixture
def empty(neo4j_live):
    with _server(neo4j_live) as s:
        s.clear()
    with open_typed_store(neo4j_live.uri, "neo4j", **neo4j_live.kw) as t:
        t.clear()  # type: ignore[attr-defined]
    return neo4j_live


def _local_kg(path, n: int):
    """A KG of ``n`` triplets over a chain of entities, with one repeated spelling."""
    with open_store(path) as s:
        triplets = [T(f"Gene {i}", "regulates", f"Gene {i + 1}", f"q{i}") for i in range(n)]
        s.add_triplets([*triplets, T("gene 0", "REGULATES", "GENE 1")])
    return path


def test_push_batches_and_resumes_without_duplicates(tmp_path, empty, monkeypatch) -> None:
    kg = _local_kg(tmp_path / "kg", 250)
    calls = {"n": 0}
    real_add = Neo4jKGStore.add_triplets

    def add_then_fail(self, triplets):
        calls["n"] += 1
        if calls["n"] == 3:
            raise ConnectionError("the server went away")
        return real_add(self, triplets)

    monkeypatch.setattr(Neo4jKGStore, "add_triplets", add_then_fail)
    with pytest.raises(ConnectionError):
        push_kg(kg, empty.uri, **empty.kw, batch_size=100)
    cp = json.loads((kg / CHECKPOINT).read_text())
    assert cp["pushed"] == 200 and cp["uri"] == empty.uri and "password" not in json.dumps(cp)
    monkeypatch.setattr(Neo4jKGStore, "add_triplets", real_add)

    r = push_kg(kg, empty.uri, **empty.kw, batch_size=100)
    assert (r.local_triplets, r.resumed_from, r.pushed, r.batches) == (250, 200, 50, 1)
    assert (r.added, r.duplicates, r.server_triplets, r.server_entities) == (50, 0, 250, 251)

    again = push_kg(kg, empty.uri, **empty.kw, batch_size=100, restart=True)
    assert (again.pushed, again.added, again.duplicates) == (250, 0, 250)
    with _server(empty) as s, open_store(kg) as local:
        assert list(s.iter_triplets()) == list(local.iter_triplets())


def test_push_of_a_grown_or_replaced_kg(tmp_path, empty) -> None:
    kg = _local_kg(tmp_path / "kg", 20)
    assert push_kg(kg, empty.uri, **empty.kw).pushed == 20
    with open_store(kg) as s:
        s.add_triplets([T("Gene 99", "binds", "Gene 0")])
    grown = push_kg(kg, empty.uri, **empty.kw)
    assert (grown.resumed_from, grown.pushed, grown.added) == (20, 1, 1)
    (kg / "kg.sqlite").unlink()
    _local_kg(kg, 5)  # same path, other content: the checkpoint no longer matches
    other = push_kg(kg, empty.uri, **empty.kw)
    assert (other.resumed_from, other.pushed, other.added, other.duplicates) == (0, 5, 0, 5)


def test_push_cli_reports_json(tmp_path, empty) -> None:
    from typer.testing import CliRunner

    kg = _local_kg(tmp_path / "kg", 30)
    args = ["push", "--kg", str(kg), "--neo4j-uri", empty.uri, "--neo4j-user", empty.user]
    args += ["--neo4j-password-env", empty.password_env]
    res = CliRunner().invoke(kg_app, [*args, "--batch-size", "7", "--json"])
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    assert (data["pushed"], data["batches"], data["server_triplets"]) == (30, 5, 30)
    assert data["triplets_per_s"] > 0
    bad = CliRunner().invoke(kg_app, ["push", "--kg", str(tmp_path / "none"), "--neo4j-uri", "x"])
    assert bad.exit_code != 0 and "no knowledge graph here" in bad.output


def test_push_to_a_wrong_password_names_the_setting(tmp_path, empty, monkeypatch) -> None:
    kg = _local_kg(tmp_path / "kg", 3)
    monkeypatch.setenv("WRONG_PW", "not-the-password")
    with pytest.raises(BioragError, match=f"cannot connect to Neo4j at {empty.uri}") as e:
        push_kg(kg, empty.uri, user=empty.user, password_env="WRONG_PW")
    assert "not-the-password" not in str(e.value)


def test_vectorgraphrag_retrieval_same_on_the_server(tmp_path, empty) -> None:
    emb = DictEmbedder(TABLE)
    kg = tmp_path / "kg"
    with open_store(kg) as s:
        s.add_triplets(T(s_, p, o, f"q{i}") for i, (s_, p, o, *_) in enumerate(TRIPLETS))
    push_kg(kg, empty.uri, **empty.kw)
    server = {"uri": empty.uri, "database": None, **empty.kw}
    for direction in ("out", "both"):
        params = {"direction": direction}
        results = []
        for backend in ("sqlite", "neo4j"):
            retriever = _open_retriever(kg, backend, server, emb, params)
            r = retriever.retrieve(QUESTION, OPTIONS)
            results.append([(t, round(score, 5)) for t, score in r.triplets])
            retriever.store.close()
        assert results[0] == results[1] and len(results[0]) >= 3
    with pytest.raises(BioragError, match="neo4j_uri"):
        VectorGraphRAG(None, kg=str(kg), backend="neo4j")._setup()


def test_relations_of_an_older_store_get_their_key(empty) -> None:
    """A graph written before relations carried ``key`` (MERGE on the pattern) is keyed when a
    store opens it, so adding the same triplets again stores no duplicate."""
    with _server(empty) as s:
        s._run(
            "UNWIND $rows AS row MERGE (a:Entity {key: row.s}) ON CREATE SET a.name = row.s,"
            " a.seq = row.i MERGE (b:Entity {key: row.o}) ON CREATE SET b.name = row.o,"
            " b.seq = row.i + 100 MERGE (a)-[r:RELATION {predicate_key: 'binds'}]->(b)"
            " ON CREATE SET r.predicate = 'binds', r.seq = row.i",
            rows=[{"s": f"x{i}", "o": f"y{i}", "i": i} for i in range(3)],
        )
    with _server(empty) as s:
        r = s.add_triplets([T("X0", "Binds", "y0"), T("x2", "binds", "Y2"), T("x9", "binds", "y9")])
        assert (r.added, r.duplicates, s.count_triplets()) == (1, 2, 4)
        assert [t.subject for t in s.iter_triplets()] == ["x0", "x1", "x2", "x9"]
