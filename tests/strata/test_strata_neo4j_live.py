"""BioStrataKG built into a live Bolt/openCypher server (the ``neo4j_live`` fixture) answers its
five queries as the same build on SQLite does."""

from __future__ import annotations

from tests.strata.test_store_backends import _answers

from biorag.kg import open_store, open_typed_store
from biorag.strata import build_strata


def test_strata_build_on_the_server_answers_as_sqlite(tmp_path, neo4j_live, vocab, emb, papers):
    uri, kw = neo4j_live.uri, neo4j_live.kw
    with open_typed_store(uri, "neo4j", **kw) as t:
        t.clear()  # type: ignore[attr-defined]
    with open_store(uri, "neo4j", **kw) as f:
        f.clear()  # type: ignore[attr-defined]
    sql = build_strata(papers, None, emb, vocab, tmp_path / "a")
    live = build_strata(papers, None, emb, vocab, tmp_path / "b", backend="neo4j", uri=uri, **kw)
    assert (live.nodes, live.edges, live.triplets) == (sql.nodes, sql.edges, sql.triplets)
    assert live.flat_triplets_added == sql.flat_triplets_added > 0
    with open_typed_store(tmp_path / "a") as a, open_typed_store(uri, "neo4j", **kw) as b:
        got = _answers(b)
        assert got == _answers(a) and got["drugs"] and got["chains"]
        assert a.counts() == b.counts()
    with open_store(tmp_path / "a") as a, open_store(uri, "neo4j", **kw) as b:
        assert sorted(map(str, a.iter_triplets())) == sorted(map(str, b.iter_triplets()))
