"""``biorag eval`` and ``biorag eval report`` end to end, with the real dataset loaders."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from biorag.cli import eval_cmd
from biorag.cli.common import STATE


def make_app() -> typer.Typer:
    app = typer.Typer()

    @app.callback()
    def main() -> None:
        STATE.config = None
        STATE._settings = None

    app.add_typer(eval_cmd.app, name="eval")
    return app


@pytest.fixture
def cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for k, v in {
        "BIORAG_HOME": str(tmp_path / "home"),
        "BIORAG_LLM_BACKEND": "mock",
        "BIORAG_LLM_MOCK_SCRIPT": "dry-run",
        "BIORAG_LLM_CACHE": "false",
        "BIORAG_PROGRESS": "0",
    }.items():
        monkeypatch.setenv(k, v)
    app = make_app()
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, list(args))

    return invoke


PQAL = {
    str(pmid): {
        "QUESTION": f"Does drug {pmid} reduce mortality?",
        "CONTEXTS": [f"Drug {pmid} was given to 100 patients.", "Mortality fell by half."],
        "LABELS": ["METHODS", "RESULTS"],
        "MESHES": [],
        "YEAR": "2001",
        "LONG_ANSWER": "It does.",
        "final_decision": ["yes", "no", "maybe"][pmid % 3],
    }
    for pmid in range(100, 108)
}


@pytest.fixture
def pubmedqa_dir(tmp_path) -> Path:
    d = tmp_path / "pubmedqa"
    d.mkdir()
    (d / "ori_pqal.json").write_text(json.dumps(PQAL))
    test = {k: v["final_decision"] for k, v in PQAL.items() if int(k) % 2 == 0}
    (d / "test_ground_truth.json").write_text(json.dumps(test))
    return d


def test_eval_pubmedqa_test_split_json_and_report(cli, tmp_path, pubmedqa_dir):
    out = tmp_path / "run"
    args = [
        "eval",
        "--dataset",
        "PubMedQA",
        "--data",
        str(pubmedqa_dir / "ori_pqal.json"),
        "--split",
        "test",
        "--setting",
        "reasoning-required",
        "--methods",
        "closed-book,retrieve-read",
        "--out",
        str(out),
        "--json",
    ]
    r = cli(*args)
    assert r.exit_code == 0, r.output
    metrics = json.loads(r.stdout)
    assert metrics["dataset"] == "pubmedqa" and metrics["n_items"] == 4  # the test PMIDs
    for e in metrics["methods"].values():
        assert e["n"] == 4 and e["errors"] == 0
        assert "macro_f1" in e and e["scores"]["n"] == 4
    recs = [json.loads(x) for x in (out / "predictions.jsonl").read_text().splitlines()]
    rr = [x for x in recs if x["method"] == "retrieve-read"]
    assert all("was given to 100 patients" in x["context"] for x in rr)
    assert "LLM use per question" in r.stderr
    report = (out / "report.md").read_text()
    assert "| Approach | PMQA acc | PMQA macro-F1 |" in report
    # the same command again resumes with nothing to do; the table on stdout without --json
    r2 = cli(*args[:-1])
    assert r2.exit_code == 0, r2.output
    assert "0 answers now" in r2.stderr and "closed-book" in r2.stdout
    # a different configuration into the same directory: one line, exit 2
    r3 = cli(*args[:-1], "--limit", "2", "--method-options", '{"retrieve-read": {"k": 3}}')
    assert r3.exit_code == 2
    assert r3.stderr.startswith("error: ") and "method_options.retrieve-read" in r3.stderr
    assert len(r3.stderr.strip().splitlines()) == 1
    # rebuilding the report
    (out / "report.md").unlink()
    r4 = cli("eval", "report", "--out", str(out))
    assert r4.exit_code == 0, r4.output
    assert (out / "report.md").is_file()


def test_eval_user_mistakes(cli, tmp_path, pubmedqa_dir):
    data = str(pubmedqa_dir / "ori_pqal.json")
    r = cli("eval", "--dataset", "pubmedqa", "--data", data, "--out", str(tmp_path / "o"))
    assert r.exit_code == 2 and "--methods" in r.stderr
    r = cli(
        "eval",
        "--dataset",
        "nope",
        "--data",
        data,
        "--methods",
        "closed-book",
        "--out",
        str(tmp_path / "o"),
    )
    assert r.exit_code == 2 and "unknown dataset" in r.stderr
    r = cli(
        "eval",
        "--dataset",
        "pubmedqa",
        "--data",
        data,
        "--methods",
        "closed-book",
        "--method-options",
        "[1]",
        "--out",
        str(tmp_path / "o"),
    )
    assert r.exit_code == 2 and "keyed by method" in r.stderr
    r = cli("eval", "report", "--out", str(tmp_path / "none"))
    assert r.exit_code == 2 and "metrics.json" in r.stderr


@pytest.mark.shared
def test_eval_on_the_shared_mirage_file(cli, tmp_path, shared_data):
    out = tmp_path / "mirage"
    r = cli(
        "eval",
        "--dataset",
        "mirage",
        "--data",
        str(shared_data / "mirage" / "benchmark.json"),
        "--methods",
        "closed-book",
        "--limit",
        "6",
        "--concurrency",
        "3",
        "--out",
        str(out),
        "--json",
    )
    assert r.exit_code == 0, r.output
    e = json.loads(r.stdout)["methods"]["closed-book"]
    assert e["n"] == 6 and e["answered"] == 6
    assert e["accounting_per_question"]["total"]["calls"] >= 1


BIOASQ = {
    "questions": [
        {
            "id": "s1",
            "body": "What does metformin do?",
            "type": "summary",
            "documents": ["http://www.ncbi.nlm.nih.gov/pubmed/1001"],
            "snippets": [{"text": "Metformin reduces hepatic glucose production."}],
            "ideal_answer": ["Metformin lowers hepatic glucose output."],
        },
        {
            "id": "y1",
            "body": "Is atorvastatin a statin?",
            "type": "yesno",
            "documents": ["http://www.ncbi.nlm.nih.gov/pubmed/1002"],
            "snippets": [{"text": "Atorvastatin is a statin that lowers LDL cholesterol."}],
            "ideal_answer": ["Yes, atorvastatin is a statin."],
            "exact_answer": "yes",
        },
        {
            "id": "f1",
            "body": "Which organ makes insulin?",
            "type": "factoid",
            "documents": ["http://www.ncbi.nlm.nih.gov/pubmed/1003"],
            "snippets": [{"text": "Insulin is made by beta cells of the pancreas."}],
            "ideal_answer": ["The pancreas."],
            "exact_answer": [["pancreas"]],
        },
    ]
}


def test_eval_judges_bioasq_answers_and_rejudges(cli, tmp_path, monkeypatch):
    data = tmp_path / "11B1_golden.json"
    data.write_text(json.dumps(BIOASQ))
    out = tmp_path / "bq"
    args = ["eval", "--dataset", "bioasq", "--data", str(data), "--setting", "snippets"]
    args += ["--methods", "retrieve-read", "--out", str(out)]
    r = cli(*args, "--json")
    assert r.exit_code == 0, r.output
    b = json.loads(r.stdout)["methods"]["retrieve-read"]["judged"]
    # the judge inherits the dry-run model, which scores every answer 3
    assert b["judge_model"] == "mock:dry-run" and b["n"] == 3 and b["mean"] == 3.0
    assert "judged 3 answers now" in r.stderr
    r = cli(*args)  # resumed: nothing new; the judged column in the text table
    assert r.exit_code == 0, r.output
    assert "judged 0 answers now" in r.stderr and "3 from before" in r.stderr
    assert "judged (1-5)" in r.stdout and "3.00 (n=3)" in r.stdout
    # another judge model: `eval judge` judges every answer again, without answering
    monkeypatch.setenv("BIORAG_JUDGE_MODEL", "judge-two")
    r = cli("eval", "judge", "--out", str(out), "--json")
    assert r.exit_code == 0, r.output
    assert "judged 3 answers now" in r.stderr
    assert json.loads(r.stdout)["methods"]["retrieve-read"]["judged"]["judge_model"] == (
        "mock:judge-two"
    )
    assert len((out / "predictions.jsonl").read_text().splitlines()) == 3
    r = cli("eval", "report", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert "3.00 (n=3)" in r.stdout
    assert "| mock:judge-two | 3.00 | 3 |" in (out / "report.md").read_text()
    # --judge off: a note instead of a score
    r = cli(*args, "--judge", "off", "--json")
    assert r.exit_code == 0, r.output
    assert "judge.mode" in json.loads(r.stdout)["methods"]["retrieve-read"]["judged"]["note"]


def test_judge_user_mistakes(cli, tmp_path, monkeypatch):
    data = tmp_path / "11B1_golden.json"
    data.write_text(json.dumps(BIOASQ))
    args = ["eval", "--dataset", "bioasq", "--data", str(data), "--setting", "snippets"]
    args += ["--methods", "retrieve-read", "--out", str(tmp_path / "o")]
    r = cli(*args, "--judge", "maybe")
    assert r.exit_code == 2 and "--judge must be one of auto, on, off" in r.stderr
    monkeypatch.setenv("BIORAG_LLM_BACKEND", "none")
    r = cli(*args, "--judge", "on")
    assert r.exit_code == 2 and r.stderr.startswith("error: judging is required")
    assert len(r.stderr.strip().splitlines()) == 1 and "BIORAG_JUDGE_MODEL" in r.stderr
    assert not (tmp_path / "o" / "predictions.jsonl").exists()
    r = cli("eval", "judge", "--out", str(tmp_path / "nothing"))
    assert r.exit_code == 2 and "no run.json" in r.stderr
    monkeypatch.setenv("BIORAG_JUDGE_BACKEND", "openai")
    r = cli(*args)
    assert r.exit_code == 2 and "judge model settings" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_second_run_into_a_busy_directory_is_refused_and_leaves_it_untouched(
    cli, tmp_path, pubmedqa_dir
):
    from biorag.eval.run.records import RunDirLock

    out = tmp_path / "busy"
    args = ["eval", "--dataset", "pubmedqa", "--data", str(pubmedqa_dir / "ori_pqal.json"),
            "--setting", "reasoning-required", "--out", str(out)]  # fmt: skip
    first = cli(*args, "--methods", "closed-book", "--limit", "2")
    assert first.exit_code == 0, first.output
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with RunDirLock(out):  # a run still going in the same directory
        second = cli(*args, "--methods", "retrieve-read", "--limit", "3")
    assert second.exit_code == 2
    assert "another run is using" in second.stderr and "Traceback" not in second.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # run.json included
    third = cli(*args, "--methods", "closed-book", "--limit", "2")  # the lock went with the run
    assert third.exit_code == 0, third.output
