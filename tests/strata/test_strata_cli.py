"""``biorag strata build|stats|query|generate`` through typer's CliRunner (fake embedder)."""

from __future__ import annotations

import json

import pytest
from tests.kg.test_typed_store_neo4j import FakeNeo4jServer
from typer.testing import CliRunner

from biorag.cli import strata_cmd
from biorag.cli.strata_cmd import app
from biorag.kg import open_store

runner = CliRunner()


@pytest.fixture
def built(tmp_path, vocab_files, papers, emb, monkeypatch, cli_components):
    cli_components(embedder=emb, llm=None)
    src = tmp_path / "papers.jsonl"
    src.write_text("".join(json.dumps(p) + "\n" for p in papers), encoding="utf-8")
    mesh, uni = vocab_files
    out = tmp_path / "kg"
    args = ["build", "--papers", str(src), "--mesh", str(mesh), "--uniprot", str(uni)]
    r = runner.invoke(app, [*args, "--out", str(out), "--json"])
    assert r.exit_code == 0, r.output
    return out, json.loads(r.stdout)


def test_build_stats_json(built):
    out, report = built
    assert report["papers"] == 3 and report["mode"] == "no-llm" and report["triplets"] > 0
    # no LLM: no calls, but the build's wall-clock time
    assert report["accounting"]["stages"] == {} and report["accounting"]["total"]["calls"] == 0
    assert report["accounting"]["wall_s"] > 0
    r = runner.invoke(app, ["stats", "--strata", str(out), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["nodes"]["Paper"] == 4  # P1-P3 and the cited stub X9
    assert data["edges"]["CITES"] == 2 and data["edges"]["MENTIONS"] > 0
    assert data["nodes"] == report["nodes"]
    text = runner.invoke(app, ["stats", "--strata", str(out)])
    assert text.exit_code == 0 and "Paper" in text.stdout


def test_queries(built):
    out, _ = built
    r = runner.invoke(app, ["query", "drugs-for", "breast cancer", "--strata", str(out), "--json"])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)["result"]
    assert {"drug": "Trastuzumab", "relation": "TREATS", "papers": ["P1"]} in rows
    r = runner.invoke(app, ["query", "gene-disease", "ERBB2", "--strata", str(out), "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["result"]
    r = runner.invoke(app, ["query", "papers-in", "oncology", "--strata", str(out), "--json"])
    assert [p["pid"] for p in json.loads(r.stdout)["result"]] == ["P1", "P2"]
    r = runner.invoke(app, ["query", "methods-of", "oncology", "--strata", str(out)])
    assert r.exit_code == 0 and "methods:" in r.stdout
    r = runner.invoke(app, ["query", "drugs-for", "Type 2 Diabetes", "--strata", str(out)])
    assert r.exit_code == 0 and "Metformin" in r.stdout
    r = runner.invoke(app, ["query", "drug-drug", "Metformin", "--strata", str(out)])
    assert r.exit_code == 0 and "no results for drug-drug 'Metformin'" in r.stdout


def test_pubmedqa_input(tmp_path, emb, monkeypatch, cli_components):
    cli_components(embedder=emb, llm=None)
    src = tmp_path / "ori_pqal.json"
    rec = {"QUESTION": "Does X?", "CONTEXTS": ["A cohort study.", "Metformin."],
           "MESHES": ["Cardiology"], "YEAR": "2011", "LONG_ANSWER": "SECRET ANSWER"}  # fmt: skip
    src.write_text(json.dumps({"123": rec, "456": rec}), encoding="utf-8")
    papers = strata_cmd.load_papers(src, limit=1)
    assert papers[0]["pid"] == "123" and papers[0]["keywords"] == ["Cardiology"]
    assert papers[0]["abstract"] == "A cohort study. Metformin." and papers[0]["year"] == 2011
    assert "SECRET" not in json.dumps(papers)
    r = runner.invoke(app, ["build", "--papers", str(src), "--out", str(tmp_path / "k")])
    assert r.exit_code == 0, r.output
    assert "2 papers" in r.stdout


def test_missing_file_one_line_error(tmp_path):
    r = runner.invoke(app, ["build", "--papers", str(tmp_path / "nope.jsonl"), "--out", "x"])
    assert r.exit_code == 2
    err = r.stderr.strip()
    assert err.startswith("error: --papers: no such file") and "\n" not in err
    r = runner.invoke(app, ["stats", "--strata", str(tmp_path)])
    assert r.exit_code == 2 and r.stderr.startswith("error: --strata")
    r = runner.invoke(app, ["query", "bogus", "x", "--strata", str(tmp_path)])
    assert r.exit_code == 2 and "must be one of" in r.stderr


def test_build_report_points_at_the_shared_file(built):
    out, report = built
    assert report["db_path"] == str(out / "kg.sqlite") and report["backend"] == "sqlite"
    assert report["flat_triplets_added"] > 0 and not (out / "strata.sqlite").exists()


def test_backend_option_errors(tmp_path, built):
    out, _ = built
    r = runner.invoke(app, ["stats", "--strata", str(out), "--backend", "mysql"])
    assert r.exit_code == 2 and "--backend must be one of sqlite, neo4j" in r.stderr
    r = runner.invoke(app, ["stats", "--backend", "neo4j"])
    assert r.exit_code == 2 and "--neo4j-uri" in r.stderr
    r = runner.invoke(app, ["stats"])
    assert r.exit_code == 2 and "--strata DIR is needed" in r.stderr
    flat_only = tmp_path / "flat"
    open_store(flat_only).close()  # a VectorGraphRAG graph: kg.sqlite without BioStrataKG
    r = runner.invoke(app, ["query", "drugs-for", "x", "--strata", str(flat_only)])
    assert r.exit_code == 2 and "holds no BioStrataKG" in r.stderr


def test_neo4j_backend_through_the_cli(tmp_path, built, monkeypatch):
    _, report = built
    server = FakeNeo4jServer().install(monkeypatch)
    src = tmp_path / "papers.jsonl"
    mesh, uni = tmp_path / "desc.xml", tmp_path / "uniprot.tsv"
    neo = ["--backend", "neo4j", "--neo4j-uri", "bolt://fake:7687", "--neo4j-user", "ann"]
    args = ["build", "--papers", str(src), "--mesh", str(mesh), "--uniprot", str(uni)]
    r = runner.invoke(app, [*args, "--out", str(tmp_path / "n"), *neo, "--json"])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["nodes"] == report["nodes"] and server.auth is None
    r = runner.invoke(app, ["stats", *neo, "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["backend"] == "neo4j" and data["nodes"] == report["nodes"]
    r = runner.invoke(app, ["query", "drugs-for", "breast cancer", *neo, "--json"])
    assert r.exit_code == 0 and json.loads(r.stdout)["result"][0]["drug"] == "Trastuzumab"
    r = runner.invoke(app, ["generate", "--papers", str(src), "--n", "1", *neo])
    assert r.exit_code == 2 and "--out FILE" in r.stderr


def test_generate_command(tmp_path, built, monkeypatch, mock_llm, cli_components):
    out, _ = built
    gen = {"question": "What does Trastuzumab target?", "type": "factual",
           "ideal_answer": "ERBB2", "source_sentences": ["Trastuzumab targets ERBB2."]}  # fmt: skip
    llm = mock_llm(
        [
            {"stage": "biocdqa_generate", "response": gen},
            {"stage": "biocdqa_ground", "response": {"grounded": "yes"}},
        ]
    )
    cli_components(llm=llm)
    src = tmp_path / "papers.jsonl"
    r = runner.invoke(
        app, ["generate", "--papers", str(src), "--strata", str(out), "--n", "1", "--json"]
    )
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    assert rep["out_path"] == str(out / "biocdqa.jsonl") and rep["groups"] == 1
    lines = (out / "biocdqa.jsonl").read_text().splitlines()
    assert len(lines) == rep["kept"] and rep["kept"] + rep["dropped_unquoted"] == 1
    cli_components(llm=None)
    r = runner.invoke(app, ["generate", "--papers", str(src), "--strata", str(out), "--n", "1"])
    assert r.exit_code == 2 and "needs an LLM" in r.stderr
