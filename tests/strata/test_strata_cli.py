"""``biorag strata build|stats|query`` through typer's CliRunner (no-LLM floor, fake embedder)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from biorag.cli import strata_cmd
from biorag.cli.strata_cmd import app

runner = CliRunner()


@pytest.fixture
def built(tmp_path, vocab_files, papers, emb, monkeypatch):
    monkeypatch.setattr(strata_cmd, "_embedder", lambda: emb)
    monkeypatch.setattr(strata_cmd, "_llm", lambda: None)
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
    assert report["accounting"] == {}
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


def test_pubmedqa_input(tmp_path, emb, monkeypatch):
    monkeypatch.setattr(strata_cmd, "_embedder", lambda: emb)
    monkeypatch.setattr(strata_cmd, "_llm", lambda: None)
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
