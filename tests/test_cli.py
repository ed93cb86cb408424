"""The command line, run in-process with the real bundled embedding model."""

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

    def invoke(*args: str):
        return runner.invoke(app, list(args), catch_exceptions=False)

    return invoke


def test_config_show_json_and_bad_config(run, tmp_path):
    res = run("config", "show", "--json")
    assert res.exit_code == 0
    assert json.loads(res.stdout)["retrieval"]["rrf_k"] == 60
    bad = tmp_path / "bad.toml"
    bad.write_text('[retrieval]\nk = "many"\n')
    res = run("--config", str(bad), "config", "show")
    assert res.exit_code == 2
    assert "retrieval.k" in res.stderr and "Traceback" not in res.stderr


def test_index_retrieve_ask_remove(run, tmp_path, corpus_file):
    res = run("index", "build", "--corpus", str(corpus_file), "--out", "idx", "--json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["documents_total"] == 4

    stats = json.loads(run("index", "stats", "--index", "idx", "--json").stdout)
    assert stats["complete"] and stats["embed_model"].endswith("all-MiniLM-L6-v2")
    assert stats["long_chunks"]["policy"].startswith("truncated")
    long_chunks = stats["long_chunks"]
    assert long_chunks["chunks"] == stats["chunks"] and long_chunks["window"] == 250

    q = tmp_path / "q.jsonl"
    q.write_text(
        '{"id": "q1", "text": "statin lowers LDL cholesterol"}\n'
        "not json\n"
        '{"id": "q2", "text": "aspirin platelet aggregation"}\n'
    )
    res = run(
        "retrieve",
        "--index",
        "idx",
        "--queries",
        str(q),
        "--k",
        "2",
        "--level",
        "doc",
        "--out",
        "run.trec",
        "--json",
    )
    assert res.exit_code == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["queries"] == 2 and summary["skipped"] == 1
    assert "q.jsonl:2" in summary["skipped_examples"][0]
    lines = (tmp_path / "run.trec").read_text().splitlines()
    first = lines[0].split()
    assert first[:4] == ["q1", "Q0", "1002", "1"]
    assert any(line.startswith("q2 Q0 1003 1 ") for line in lines)

    # two indexes (the same corpus twice): one line per docid, scores falling with rank
    res = run("index", "build", "--corpus", str(corpus_file), "--out", "idx2", "--json")
    assert res.exit_code == 0, res.stderr
    res = run("retrieve", "--index", "idx", "--index", "idx2", "--queries", str(q),
              "--k", "3", "--level", "doc", "--out", "two.trec")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    by_query: dict[str, list[tuple[str, float]]] = {}
    for line in (tmp_path / "two.trec").read_text().splitlines():
        qid, _, docid, _, score, _ = line.split()
        by_query.setdefault(qid, []).append((docid, float(score)))
    for pairs in by_query.values():
        docids = [d for d, _ in pairs]
        assert len(docids) == len(set(docids))
        assert [s for _, s in pairs] == sorted((s for _, s in pairs), reverse=True)

    res = run(
        "ask",
        "--index",
        "idx",
        "--options",
        '{"A": "yes", "B": "no"}',
        "--json",
        "Does vitamin D supplementation reduce fracture risk?",
    )
    assert res.exit_code == 0, res.stderr
    ans = json.loads(res.stdout)
    assert ans["answer"] in {"A", "B"} and ans["evidence"]
    assert {e["source_id"] for e in ans["evidence"]} <= {"1001", "1002", "1003", "1004"}
    assert ans["accounting"]["stages"] == {} and ans["accounting"]["wall_s"] > 0

    res = run("index", "remove", "--index", "idx", "1004", "--json")
    assert json.loads(res.stdout)["documents_total"] == 3


def test_user_mistakes_are_one_line_errors(run, tmp_path):
    res = run("index", "build", "--corpus", "missing.jsonl", "--out", "idx")
    assert res.exit_code == 2 and "corpus file not found: missing.jsonl" in res.stderr
    bad = tmp_path / "notes.json"
    bad.write_text("not json at all")
    res = run("index", "build", "--corpus", str(bad), "--format", "pubmedqa", "--out", "idx2")
    assert res.exit_code == 2 and "notes.json" in res.stderr
    assert not (tmp_path / "idx2").exists()  # nothing written for a bad input
    res = run("ask", "--options", "{not json", "q?")
    assert res.exit_code == 2 and "--options is not valid JSON" in res.stderr
    res = run("ask", "--method", "closed-book", "--method-options", "[1]", "q?")
    assert res.exit_code == 2 and "--method-options must be a JSON object" in res.stderr
    assert "Traceback" not in res.stderr
    res = run("retrieve", "--index", str(tmp_path), "--queries", "q.jsonl", "--out", "r")
    assert res.exit_code == 2 and "not found" in res.stderr
    res = run("index", "stats", "--index", str(tmp_path))
    assert res.exit_code == 2 and "is not a biorag index" in res.stderr


def test_demo_json_evidence_is_in_the_index(run, tmp_path):
    res = run("demo", "--json", "--question", "1")
    assert res.exit_code == 0, res.stderr
    # the first run warns of nothing: the demo's chunks fit what the embedding model reads
    assert "WARNING" not in res.stderr and "longer than the embedding model" not in res.stderr
    assert "chunks of at most 250 word pieces" in res.stderr
    manifest = json.loads((tmp_path / "home" / "demo-index" / "manifest.json").read_text())
    assert manifest["long_chunks"]["over_window"] == 0
    out = json.loads(res.stdout)
    assert out["answer"] in out["question"]["options"]
    from biorag.corpus.store import CorpusStore

    store = CorpusStore(tmp_path / "home" / "demo-index" / "corpus.sqlite")
    docs = store.get_documents([e["doc_id"] for e in out["evidence"]])
    assert len(docs) == len({e["doc_id"] for e in out["evidence"]}) > 0
    chunks = store.get_chunks([e["chunk_id"] for e in out["evidence"]])
    for e in out["evidence"]:
        c = chunks[e["chunk_id"]]
        assert docs[c.doc_id].text[c.start : c.end] == e["text"]
    store.close()
    # The second run reuses the index.
    res = run("demo", "--json", "--question", "1")
    assert "building the demo index" not in res.stderr


def test_a_demo_index_of_another_embedder_is_rebuilt(run, tmp_path, monkeypatch):
    monkeypatch.setenv("BIORAG_EMBED_LONG_TEXTS", "pool")
    first = run("demo", "--json", "--method", "closed-book")
    assert first.exit_code == 0 and "building the demo index" in first.stderr
    monkeypatch.delenv("BIORAG_EMBED_LONG_TEXTS")
    second = run("demo", "--json", "--method", "closed-book")
    assert second.exit_code == 0, second.stderr
    built = "sentence-transformers:all-MiniLM-L6-v2#pool"
    assert f"the demo index was built with {built}: rebuilding" in second.stderr
    manifest = json.loads((tmp_path / "home" / "demo-index" / "manifest.json").read_text())
    assert manifest["embed_model"] == "sentence-transformers:all-MiniLM-L6-v2"


def test_index_build_reports_skips_duplicates_and_oversized_records(run, tmp_path, monkeypatch):
    monkeypatch.setenv("BIORAG_CORPUS_MAX_RECORD_CHARS", "200")
    corpus = tmp_path / "c.jsonl"
    rows = [
        {"id": "1", "text": "Metformin lowers blood glucose in type 2 diabetes."},
        {"id": "1", "text": "Metformin lowers blood glucose in type 2 diabetes."},
        {"id": "2", "text": "Aspirin " * 40},
    ]
    lines = [json.dumps(r) for r in rows] + ["{not json"] * 7
    corpus.write_text("\n".join(lines) + "\n")
    res = run("index", "build", "--corpus", str(corpus), "--out", "idx", "--json")
    assert res.exit_code == 0, res.stderr
    report = json.loads(res.stdout)
    assert report["documents_total"] == 1 and report["duplicates"]["same_record"] == 1
    assert report["skipped"] == 8
    assert report["skipped_by_kind"] == {"invalid JSON": 7, "over the size limit": 1}
    listed = tmp_path / "idx" / "skipped.jsonl"
    assert report["skipped_file"] == "idx/skipped.jsonl"  # as the user named the index
    assert len(listed.read_text().splitlines()) == 8
    res = run("index", "add", str(corpus), "--index", "idx")
    assert "skipped 8 record(s) (invalid JSON: 7, over the size limit: 1)" in res.stderr
    assert "every skipped record, with its file and line: idx/skipped.jsonl" in res.stderr
    assert "1 record(s) appeared twice or more: each kept once" in res.stderr


# kg and strata through the real command with nothing patched: the configured embedder (the
# bundled MiniLM), no LLM (the default), a real home directory.


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


def test_retrieve_with_new_settings_reports_them_and_a_bad_pairs_file_is_one_line(
    run, tmp_path, corpus_file, monkeypatch
):
    assert run("index", "build", "--corpus", str(corpus_file), "--out", "idx").exit_code == 0
    q = tmp_path / "q.jsonl"
    q.write_text('{"id": "q1", "text": "LDL cholesterol and statins"}\n')
    monkeypatch.setenv("BIORAG_RETRIEVAL_PRF", "rm3")
    monkeypatch.setenv("BIORAG_RETRIEVAL_ABBREVIATIONS", "corpus")
    res = run("retrieve", "--index", "idx", "--queries", str(q), "--level", "doc",
              "--out", "r.trec", "--json")  # fmt: skip
    assert res.exit_code == 0, res.stderr
    differ = json.loads(res.stdout)["settings_differ"]["idx"]
    assert "retrieval.prf='rm3' (built with 'none')" in differ
    assert (tmp_path / "r.trec").read_text().startswith("q1 Q0 1002 1 ")
    bad = tmp_path / "pairs.tsv"
    bad.write_text("LDL low-density lipoprotein\n")
    monkeypatch.setenv("BIORAG_RETRIEVAL_ABBREVIATIONS", str(bad))
    res = run("retrieve", "--index", "idx", "--queries", str(q), "--out", "r2.trec")
    assert res.exit_code != 0 and "Traceback" not in res.stderr
    (line,) = [ln for ln in res.stderr.splitlines() if ln.startswith("error:")]
    assert "retrieval.abbreviations: pairs.tsv line 1 is not short<TAB>long" in line
