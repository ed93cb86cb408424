"""``biorag kg`` and ``biorag strata`` through the real command with nothing patched: the
configured embedder (the bundled MiniLM), no LLM (the default), a real home directory."""

from __future__ import annotations

import json

import pytest
from tests.strata.conftest import PAPERS
from typer.testing import CliRunner

from biorag.cli.main import app

pytestmark = pytest.mark.slow


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("BIORAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BIORAG_PROGRESS", "0")
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


def test_kg_build_and_query_with_the_configured_embedder(run, tmp_path):
    qa = tmp_path / "qa.jsonl"
    rows = [
        {"question": "Which drug lowers blood glucose in type 2 diabetes?", "answer": "Metformin"},
        {"question": "Which drug targets ERBB2 in breast cancer?", "answer": "Trastuzumab"},
    ]
    qa.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    built = run("kg", "build", "--from", str(qa), "--format", "jsonl", "--out", "kg", "--json")
    assert built.exit_code == 0, built.output
    report = json.loads(built.stdout)
    assert report["added"] >= 2 and report["accounting"]["total"]["calls"] == 0  # no LLM
    stats = json.loads(run("kg", "stats", "--kg", "kg", "--json").stdout)
    assert stats["entity_index"]["model_id"] == "sentence-transformers:all-MiniLM-L6-v2"
    asked = run("kg", "query", "--kg", "kg", "--json", "Which drug targets ERBB2 in breast cancer?")
    assert asked.exit_code == 0, asked.output
    found = json.loads(asked.stdout)
    assert any(m["entity"] == "drug" for m in found["matched_entities"])
    # the rule floor's triplets (drug, targets, ERBB2 ... Trastuzumab) rank first for it
    assert "Trastuzumab" in json.dumps(found["triplets"][0])


def test_strata_build_stats_and_query_with_the_configured_embedder(run, tmp_path):
    papers = tmp_path / "papers.jsonl"
    papers.write_text("".join(json.dumps(p) + "\n" for p in PAPERS), encoding="utf-8")
    built = run("strata", "build", "--papers", str(papers), "--out", "s", "--json")
    assert built.exit_code == 0, built.output
    report = json.loads(built.stdout)
    assert report["papers"] == 3 and report["mode"] == "no-llm" and report["triplets"] >= 2
    assert "not normalized" in report["entities"]  # no vocabulary given
    stats = json.loads(run("strata", "stats", "--strata", "s", "--json").stdout)
    assert stats["nodes"]["Drug"] >= 2 and stats["edges"]["MENTIONS"] > 0
    asked = run("strata", "query", "drugs-for", "breast cancer", "--strata", "s", "--json")
    assert asked.exit_code == 0, asked.output
    assert [r["drug"] for r in json.loads(asked.stdout)["result"]] == ["Trastuzumab"]
