"""``biorag kg``: build, stats, query, export and import through the CLI (hash embedder)."""

from __future__ import annotations

import csv
import json

import networkx as nx
import pytest
import typer
from tests.conftest import HashEmbedder
from typer.testing import CliRunner

from biorag.cli import kg_cmd
from biorag.cli.common import STATE
from biorag.llm import LLM, MockBackend

RECORDS = [
    {"subject": "Chloroquine", "predicate": "treats", "object": "Malaria", "source_id": "d1"},
    {"subject": "Malaria", "predicate": "is caused by", "object": "Plasmodium"},
    "not json",
    {"subject": "Aspirin", "predicate": "inhibits", "object": ""},
    {"question": "Which vitamin prevents scurvy?", "answer": "Vitamin C", "id": "q1"},
    {"id": "x", "text": "neither kind"},
    {"subject": "Insulin", "predicate": "lowers", "object": "blood glucose"},
    {"subject": "Chloroquine", "predicate": "treats", "object": "malaria"},  # a duplicate
]


def _app() -> typer.Typer:
    app = typer.Typer()
    app.add_typer(kg_cmd.app, name="kg")  # as main.py registers it

    @app.callback()
    def main() -> None:
        pass

    return app


@pytest.fixture
def run(tmp_path, monkeypatch, cli_components):
    monkeypatch.setenv("BIORAG_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BIORAG_PROGRESS", "0")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(STATE, "config", None)
    monkeypatch.setattr(STATE, "_settings", None)
    emb = HashEmbedder()
    cli_components(embedder=emb, llm=None)
    app, runner = _app(), CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, ["kg", *args], catch_exceptions=False)

    return invoke


@pytest.fixture
def jsonl(tmp_path):
    path = tmp_path / "kg.jsonl"
    lines = [r if isinstance(r, str) else json.dumps(r) for r in RECORDS]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _one_line_error(res, *words: str) -> None:
    assert res.exit_code == 2
    err = res.stderr.strip()
    assert err.startswith("error: ") and "\n" not in err and "Traceback" not in err
    for w in words:
        assert w in err


def test_build_stats_query_export_import(run, tmp_path, jsonl):
    res = run("build", "--from", str(jsonl), "--format", "jsonl", "--out", "kg", "--json")
    assert res.exit_code == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["added"] == 4 and rep["duplicates"] == 1 and rep["extracted"] == 5
    assert rep["triplets_total"] == 4 and rep["entities_embedded"] == rep["entities_total"]
    where = {d["where"].rsplit("/", 1)[-1]: d["reason"] for d in rep["dropped"]}
    assert set(where) == {"kg.jsonl:3", "kg.jsonl:4", "kg.jsonl:6"}
    assert where["kg.jsonl:4"] == "empty object" and "not JSON" in where["kg.jsonl:3"]
    assert rep["dropped_count"] == 3 and "kg.jsonl:4: empty object" in res.stderr
    assert "accounting: no LLM calls" in res.stderr
    for name in ("kg.sqlite", "entities.json", "entities.npy", "triplets.csv", "build.json"):
        assert (tmp_path / "kg" / name).is_file()

    st = json.loads(run("stats", "--kg", "kg", "--json").stdout)
    assert st["triplets"] == 4 and st["entities"] == 7
    assert st["entity_index"]["indexed"] == 7 and st["entity_index"]["not_indexed"] == 0
    assert st["entity_index"]["model_id"] == "test:hash-64"
    assert st["models"]["given"] == 3 and st["models"]["rule-based"] == 1
    assert st["last_build"]["format"] == "jsonl"
    text = run("stats", "--kg", "kg")
    assert text.exit_code == 0 and "triplets: 4" in text.stdout

    res = run("query", "--kg", "kg", "--json", "Which drug treats malaria?")
    assert res.exit_code == 0, res.stderr
    q = json.loads(res.stdout)
    assert "malaria" in q["search_terms"]
    assert {"term": "malaria", "entity": "Malaria", "similarity": 1.0} in q["matched_entities"]
    assert q["triplets"][0]["rank"] == 1
    assert any(t["subject"] == "Malaria" and t["object"] == "Plasmodium" for t in q["triplets"])
    res = run("query", "--kg", "kg", "--top-n", "1", "--direction", "both", "malaria drug")
    assert res.exit_code == 0 and "matched entities" in res.stdout and "1 ranked" in res.stdout

    res = run("export", "--kg", "kg", "--format", "jsonl", "--out", "out/t.jsonl", "--json")
    assert json.loads(res.stdout)["triplets"] == 4
    assert len((tmp_path / "out/t.jsonl").read_text().splitlines()) == 4
    res = run("export", "--kg", "kg", "--format", "graphml", "--out", "out/kg.graphml")
    assert res.exit_code == 0
    assert nx.read_graphml(tmp_path / "out/kg.graphml").number_of_edges() == 4
    res = run("export", "--kg", "kg", "--format", "neo4j-csv", "--out", "out/neo4j", "--json")
    assert {f.rsplit("/", 1)[-1] for f in json.loads(res.stdout)["files"]} == {
        "entities.csv",
        "relations.csv",
    }

    # the expert edits the review CSV: fixes one row, deletes one, adds two bad rows
    rows = list(csv.reader((tmp_path / "kg/triplets.csv").open(encoding="utf-8")))
    assert rows[0] == ["subject", "predicate", "object", "source_id", "model"]
    kept = [r for r in rows[1:] if r[0] != "Insulin"]
    kept[0][2] = "falciparum malaria"
    edited = tmp_path / "edited.csv"
    with edited.open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(rows[0])
        w.writerows(kept)
        w.writerow(["Heparin", "", "thrombosis", "", ""])  # line len(kept) + 2
        w.writerow(["only", "two"])
    bad1, bad2 = len(kept) + 2, len(kept) + 3
    res = run("import", "--kg", "kg", str(edited), "--json")
    assert res.exit_code == 0, res.stderr
    imp = json.loads(res.stdout)
    assert [r["line"] for r in imp["rejected"]] == [bad1, bad2]
    assert imp["rejected"][0]["reason"] == "empty predicate"
    assert f"edited.csv:{bad1}: rejected: empty predicate" in res.stderr
    assert f"edited.csv:{bad2}: rejected: expected 5 columns" in res.stderr
    assert imp["mode"] == "replace" and imp["triplets_before"] == 4
    assert imp["triplets_total"] == 3 and imp["review_csv_rewritten"]
    assert imp["entities_removed"] >= 2  # Insulin, blood glucose, (Malaria as an object only)
    st = json.loads(run("stats", "--kg", "kg", "--json").stdout)
    assert st["triplets"] == 3 and st["entity_index"]["stale"] == 0
    assert st["entity_index"]["not_indexed"] == 0
    q = json.loads(run("query", "--kg", "kg", "--json", "chloroquine falciparum malaria").stdout)
    assert {"Chloroquine"} <= {m["entity"] for m in q["matched_entities"]}
    assert not any(m["entity"] == "Insulin" for m in q["matched_entities"])
    reviewed = (tmp_path / "kg/triplets.csv").read_text(encoding="utf-8")
    assert "falciparum malaria" in reviewed and "Insulin" not in reviewed

    # --add keeps the graph and adds the valid rows (all duplicates here)
    res = run("import", "--kg", "kg", "--add", str(edited))
    assert res.exit_code == 0 and "0 added, 3 duplicates, 2 rejected (add)" in res.stdout


def test_import_bad_header_changes_nothing(run, tmp_path, jsonl):
    assert run("build", "--from", str(jsonl), "--format", "jsonl", "--out", "kg").exit_code == 0
    bad = tmp_path / "bad.csv"
    bad.write_text("s,p,o\na,b,c\n", encoding="utf-8")
    _one_line_error(run("import", "--kg", "kg", str(bad)), "header")
    assert json.loads(run("stats", "--kg", "kg", "--json").stdout)["triplets"] == 4
    assert not list((tmp_path / "kg").glob(".import*"))
    _one_line_error(run("import", "--kg", "kg", "missing.csv"), "missing.csv")


def test_one_line_errors(run, tmp_path, jsonl):
    _one_line_error(run("stats", "--kg", "nowhere"), "nowhere", "kg build")
    _one_line_error(run("query", "--kg", "nowhere", "q?"), "nowhere")
    _one_line_error(run("export", "--kg", "nowhere", "--format", "jsonl", "--out", "x"))
    (tmp_path / "empty").mkdir()
    _one_line_error(run("stats", "--kg", "empty"), "kg.sqlite")
    _one_line_error(
        run("build", "--from", str(jsonl), "--format", "csv", "--out", "kg"),
        "--format",
        "medmcqa, mirage, jsonl, text",
    )
    _one_line_error(run("build", "--from", "nope.jsonl", "--format", "jsonl", "--out", "kg"))
    _one_line_error(
        run("build", "--from", str(jsonl), "--format", "jsonl", "--out", "kg", "--half", "third")
    )
    _one_line_error(run("build", "--from", str(jsonl), "--format", "medmcqa", "--out", "kg"))
    assert run("build", "--from", str(jsonl), "--format", "jsonl", "--out", "kg").exit_code == 0
    _one_line_error(
        run("export", "--kg", "kg", "--format", "rdf", "--out", "x"), "neo4j-csv, graphml, jsonl"
    )
    _one_line_error(run("query", "--kg", "kg", "--options", "[1]", "q?"), "--options")


MEDMCQA = [
    {
        "id": f"m{i}",
        "question": q,
        "opa": a,
        "opb": "Aspirin",
        "opc": "Heparin",
        "opd": "Warfarin",
        "cop": 1,
        "choice_type": "single",
        "subject_name": "Pharmacology",
        "exp": exp,
    }
    for i, (q, a, exp) in enumerate(
        [
            ("Drug of choice for malaria?", "Chloroquine", "Chloroquine treats malaria."),
            ("Which hormone lowers blood glucose?", "Insulin", None),
            ("Which vitamin prevents scurvy?", "Vitamin C", "Vitamin C prevents scurvy."),
            ("Which drug treats tuberculosis?", "Isoniazid", "Isoniazid treats tuberculosis."),
        ]
    )
]


def test_build_medmcqa_half_text_and_llm(run, tmp_path, monkeypatch, cli_components):
    dev = tmp_path / "dev.json"
    dev.write_text("".join(json.dumps(r) + "\n" for r in MEDMCQA), encoding="utf-8")
    res = run(
        "build", "--from", str(dev), "--format", "medmcqa", "--half", "second", "--out", "m",
        "--json",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["units"] == 4 and rep["units_kept"] == 2 and rep["added"] == 2
    sources = {r["source_id"] for r in map(json.loads, _export_lines(run, tmp_path, "m"))}
    assert sources == {"m2", "m3"}
    assert "Isoniazid" in (tmp_path / "m/triplets.csv").read_text(encoding="utf-8")

    notes = tmp_path / "notes.txt"
    notes.write_text(
        "Metformin reduces hepatic glucose production.\n\nShort.\n"
        "Aspirin inhibits platelet aggregation in adults.\n",
        encoding="utf-8",
    )
    res = run("build", "--from", str(notes), "--format", "text", "--out", "t", "--json")
    assert res.exit_code == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["units"] == 2 and rep["added"] >= 1
    assert all(d["where"].endswith(("notes.txt:1", "notes.txt:3")) for d in rep["dropped"])

    replies = [{"response": "SUBJECT: Isoniazid\nPREDICATE: treats\nOBJECT: tuberculosis"}]
    client = LLM(MockBackend(rules=replies), max_retries=0, retry_base_delay=0.0)
    cli_components(llm=client)
    res = run("build", "--from", str(dev), "--format", "medmcqa", "--limit", "1", "--out", "l")
    assert res.exit_code == 0, res.stderr
    assert "1 triplets added" in res.stdout and "kg_triplets" in res.stderr
    assert "calls=1" in res.stderr


def _export_lines(run, tmp_path, kg):
    out = tmp_path / f"{kg}.jsonl"
    assert run("export", "--kg", kg, "--format", "jsonl", "--out", str(out)).exit_code == 0
    return out.read_text(encoding="utf-8").splitlines()


def test_import_replace_keeps_the_typed_graph_in_the_same_file(run, tmp_path, jsonl):
    from biorag.kg import open_typed_store

    assert run("build", "--from", str(jsonl), "--format", "jsonl", "--out", "kg").exit_code == 0
    with open_typed_store(tmp_path / "kg") as typed:  # BioStrataKG's tables in kg.sqlite
        a = typed.upsert_node("Drug", "aspirin", "Aspirin")
        b = typed.upsert_node("Disease", "fever", "Fever")
        typed.add_edge(a, b, "TREATS", "p1")
        typed.commit()
    edited = tmp_path / "edited.csv"
    edited.write_text(
        "subject,predicate,object,source_id,model\nQuinine,treats,Malaria,d9,expert\n",
        encoding="utf-8",
    )
    assert run("import", "--kg", "kg", str(edited)).exit_code == 0
    assert json.loads(run("stats", "--kg", "kg", "--json").stdout)["triplets"] == 1
    with open_typed_store(tmp_path / "kg") as typed:
        assert [e["type"] for e in typed.edges()] == ["TREATS"]
        assert {n["name"] for n in typed.nodes()} == {"Aspirin", "Fever"}
