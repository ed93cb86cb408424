"""The knowledge-graph endpoints of ``biorag serve`` over a BioStrataKG built from three papers
(its directory is both a strata graph and, by its projection, a flat triplet graph)."""

from __future__ import annotations

import io
import zipfile

import httpx
import pytest

pytest.importorskip("fastapi")

from biorag.config import Settings
from biorag.runtime import Runtime
from biorag.serve.app import ServerConfig, create_app
from biorag.strata import build_strata


@pytest.fixture
def graph_dir(tmp_path, vocab, emb, papers):
    build_strata(papers, None, emb, vocab, tmp_path / "kg")
    return tmp_path / "kg"


def client(tmp_path, emb, **config) -> httpx.AsyncClient:
    settings = Settings(home=str(tmp_path / "home"))
    rt = Runtime(settings, [], embedder=emb)
    app = create_app(settings, ServerConfig(**config), runtime=rt)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


async def test_neighbourhood_stats_and_strata_queries(tmp_path, emb, graph_dir):
    async with client(tmp_path, emb, kg=graph_dir, strata=graph_dir) as c:
        stats = (await c.get("/v1/kg/stats")).json()
        assert stats["kg"]["triplets"] > 0 and stats["strata"]["typed_nodes"]["Drug"] >= 1
        hood = (await c.get("/v1/kg/neighbourhood", params={"entity": "Trastuzumab"})).json()
        assert hood["found"] and {"source": "Trastuzumab", "target": "Breast Neoplasms",
                                  "predicate": "treats", "source_id": "P1",
                                  "model": "rule-based"} in hood["edges"]  # fmt: skip
        assert {n["id"] for n in hood["nodes"]} >= {"Trastuzumab", "Breast Neoplasms"}
        both = {"entity": "Breast Neoplasms", "direction": "both"}
        incoming = await c.get("/v1/kg/neighbourhood", params=both)
        assert any(e["target"] == "Breast Neoplasms" for e in incoming.json()["edges"])
        missing = (await c.get("/v1/kg/neighbourhood", params={"entity": "Trastu"})).json()
        assert not missing["found"] and missing["edges"] == []
        assert "Trastuzumab" in missing["suggestions"]
        drugs = (await c.get("/v1/strata/drugs-for", params={"name": "breast cancer"})).json()
        assert "Trastuzumab" in {r["drug"] for r in drugs["result"]}
        methods = (await c.get("/v1/strata/methods-of", params={"name": "oncology"})).json()
        assert set(methods["result"]) == {"methods", "datasets"}
        for q in ("gene-disease", "drug-drug", "papers-in"):
            r = await c.get(f"/v1/strata/{q}", params={"name": "HER2"})
            assert r.status_code == 200 and isinstance(r.json()["result"], list)


async def test_exports_are_files(tmp_path, emb, graph_dir):
    async with client(tmp_path, emb, kg=graph_dir) as c:
        graphml = await c.get("/v1/kg/export", params={"format": "graphml"})
        assert graphml.status_code == 200 and b"<graphml" in graphml.content
        assert "kg-kg.graphml" in graphml.headers["content-disposition"]
        lines = (await c.get("/v1/kg/export", params={"format": "jsonl"})).text.splitlines()
        assert lines and '"subject"' in lines[0]
        csv = await c.get("/v1/kg/export", params={"format": "neo4j-csv"})
        names = zipfile.ZipFile(io.BytesIO(csv.content)).namelist()
        assert sorted(names) == ["entities.csv", "relations.csv"]


async def test_graphs_not_served_or_bad_queries_are_4xx(tmp_path, emb, graph_dir):
    async with client(tmp_path, emb, kg=graph_dir) as c:
        cases = [
            (await c.get("/v1/strata/drugs-for", params={"name": "x"}), 404, "--strata DIR"),
            (await c.get("/v1/kg/neighbourhood", params={"entity": "x", "graph": "strata"}),
             404, "--strata DIR"),
            (await c.get("/v1/kg/neighbourhood", params={"entity": ""}), 422, "entity"),
            (await c.get("/v1/kg/neighbourhood", params={"entity": "x", "limit": 0}), 422, ""),
            (await c.get("/v1/kg/export", params={"format": "../etc"}), 422, "format"),
            (await c.get("/v1/kg/export", params={"graph": "/etc"}), 422, "graph"),
        ]  # fmt: skip
        for r, status, words in cases:
            assert r.status_code == status, (r.status_code, r.text)
            assert words in r.json()["error"]["message"] and "Traceback" not in r.text
    async with client(tmp_path, emb, strata=graph_dir) as c:
        r = await c.get("/v1/strata/cures", params={"name": "x"})
        assert r.status_code == 404 and "drugs-for" in r.json()["error"]["message"]
        assert (await c.get("/v1/kg/export")).status_code == 404  # no --kg
