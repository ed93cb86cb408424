"""``biorag eval score``: a predictions file scored against a benchmark without answering.
biorag's own predictions.jsonl, PubMedQA's ``{pmid: label}`` and a BioASQ submission score as
the official evaluators score the same file (their runs need ../shared); a missing, repeated or
unknown question id is one line naming the file, the line and the id, exit 2, and no score."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from tests.eval.official_tools import (
    BIOASQ_PHASE_A,
    BIOASQ_PHASE_B,
    bioasq_jar,
    differences,
    pubmedqa_script,
)
from tests.eval.test_metrics_snippets import BIOASQ
from tests.eval.test_official_bioasq import BATCHES, bioasq_run
from tests.eval.test_official_evaluators import pubmedqa_run

from biorag.eval.run.predictions_file import read_predictions_file

LABELS = ["yes", "no", "maybe"]
PQAL = {
    str(pmid): {
        "QUESTION": f"Does drug {pmid} reduce mortality?",
        "CONTEXTS": [f"Drug {pmid} was given to 100 patients."],
        "LABELS": ["METHODS"],
        "MESHES": [],
        "YEAR": "2001",
        "LONG_ANSWER": "It does.",
        "final_decision": LABELS[pmid % 3],
    }
    for pmid in range(100, 106)
}
LETTER = {"yes": "A", "no": "B", "maybe": "C"}


@pytest.fixture
def pubmedqa(tmp_path: Path) -> list[str]:
    """``--dataset pubmedqa --data ... --split test`` over six PMIDs, all in the test split."""
    (tmp_path / "ori_pqal.json").write_text(json.dumps(PQAL))
    truth = {k: v["final_decision"] for k, v in PQAL.items()}
    (tmp_path / "test_ground_truth.json").write_text(json.dumps(truth))
    return ["--dataset", "pubmedqa", "--data", str(tmp_path / "ori_pqal.json"), "--split", "test"]


def _lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _records(method: str = "closed-book", right: int = 6) -> list[dict[str, Any]]:
    """Runner-shaped records: the first ``right`` answers right, the others wrong."""
    wrong = {"A": "B", "B": "C", "C": "A"}
    return [
        {"question_id": p, "method": method, "error": None, "parse_failed": False,
         "prediction": (lambda g: g if i < right else wrong[g])(LETTER[r["final_decision"]])}
        for i, (p, r) in enumerate(PQAL.items())
    ]  # fmt: skip


def _score(cli, data: list[str], predictions: Path, *extra: str):
    return cli("eval", "score", *data, "--predictions", str(predictions), *extra)


def _error(result) -> str:
    """The one line a refused file gives (exit 2, nothing on stdout)."""
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    return line


def test_biorag_records_score_per_method(cli, tmp_path, pubmedqa) -> None:
    recs = _records("closed-book", right=6) + _records("claims", right=3)
    path = _lines(tmp_path / "predictions.jsonl", recs)
    r = _score(cli, pubmedqa, path, "--json")
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert (out["shape"], out["n_items"], out["scoring"]) == ("jsonl", 6, "official")
    assert out["methods"]["closed-book"]["accuracy"] == 1.0
    assert out["methods"]["claims"]["accuracy"] == 0.5
    only = json.loads(_score(cli, pubmedqa, path, "--method", "claims", "--json").stdout)
    assert list(only["methods"]) == ["claims"]
    text = _score(cli, pubmedqa, path, "--scoring", "biorag")
    assert text.exit_code == 0 and "accuracy" in text.stdout and "claims" in text.stdout


def test_a_retried_failure_is_the_runners_and_the_later_record_counts(
    cli, tmp_path, pubmedqa
) -> None:
    recs = _records(right=6)
    failed = {**recs[0], "error": "TimeoutError: x", "prediction": ""}
    path = _lines(tmp_path / "predictions.jsonl", [failed, *recs])
    out = json.loads(_score(cli, pubmedqa, path, "--json").stdout)
    assert out["methods"]["closed-book"]["accuracy"] == 1.0


@pytest.mark.parametrize(
    ("case", "found"),
    [
        ("missing", "predictions.jsonl: no prediction by closed-book for question 103"),
        ("repeated", "predictions.jsonl:7: question 101 is predicted by closed-book a second"),
        ("unknown", "predictions.jsonl:3: question 999 is not a question of the dataset"),
        ("not json", "predictions.jsonl:2: not a JSON record"),
        ("no id", "predictions.jsonl:4: the record has no question_id"),
    ],
)
def test_bad_records_are_one_line_naming_file_line_and_id(
    cli, tmp_path, pubmedqa, case, found
) -> None:
    recs: list[Any] = _records()
    if case == "missing":
        del recs[3]
    elif case == "repeated":
        recs.append({**recs[1], "prediction": "A"})
    elif case == "unknown":
        recs.insert(2, {**recs[2], "question_id": "999"})
    elif case == "no id":
        recs[3] = {"method": "closed-book", "prediction": "A"}
    path = _lines(tmp_path / "predictions.jsonl", recs)
    if case == "not json":
        lines = path.read_text().splitlines()
        path.write_text("\n".join([lines[0], lines[1][:20], *lines[2:]]) + "\n")
    line = _error(_score(cli, pubmedqa, path, "--json"))
    assert line.startswith("error: ") and found in line, line
    assert line.endswith("(option --predictions)"), line  # the CLI names its option


def test_an_absent_method_is_named(cli, tmp_path, pubmedqa) -> None:
    path = _lines(tmp_path / "predictions.jsonl", _records())
    line = _error(_score(cli, pubmedqa, path, "--method", "claims"))
    assert "has no predictions by method claims" in line


@pytest.mark.parametrize("case", ["missing", "repeated", "unknown"])
def test_bad_pubmedqa_submissions(cli, tmp_path, pubmedqa, case) -> None:
    body = [f'  "{p}": "{r["final_decision"]}"' for p, r in PQAL.items()]
    if case == "missing":
        del body[2]
    elif case == "repeated":
        body.append('  "101": "no"')
    else:
        body.append('  "4242": "yes"')
    path = tmp_path / "submission.json"
    path.write_text("{\n" + ",\n".join(body) + "\n}\n")
    line = _error(_score(cli, pubmedqa, path))
    assert {
        "missing": "submission.json: no prediction for question 102 (1 of 6",
        "repeated": "submission.json:8: question 101 is predicted twice",
        "unknown": "submission.json:8: question 4242 is not a question",
    }[case] in line, line
    path.write_text(json.dumps({p: r["final_decision"] for p, r in PQAL.items()}))
    scores = json.loads(_score(cli, pubmedqa, path, "--json").stdout)["methods"]
    assert scores["submission"]["accuracy"] == 1.0


@pytest.mark.parametrize("case", ["missing", "repeated", "unknown"])
def test_bad_bioasq_submissions(cli, tmp_path, case) -> None:
    golden = tmp_path / "11B1_golden.json"
    golden.write_text(json.dumps(BIOASQ))
    answers = [{"id": q["id"], "exact_answer": q["exact_answer"]} for q in BIOASQ["questions"]]
    if case == "missing":
        answers.pop(0)
    elif case == "repeated":
        answers.append(answers[1])
    else:
        answers.insert(1, {"id": "5e2b", "exact_answer": "yes"})
    path = tmp_path / "system.json"
    path.write_text(json.dumps({"questions": answers}, indent=1))
    line = _error(_score(cli, ["--dataset", "bioasq", "--data", str(golden)], path))
    at = [n for n, text in enumerate(path.read_text().splitlines(), 1) if '"id"' in text]
    at += [0] * (3 - len(at))
    where = {"missing": "system.json: no prediction for question q1",
             "repeated": f"system.json:{at[2]}: question q2 is answered twice",
             "unknown": f"system.json:{at[1]}: question 5e2b is not a question"}  # fmt: skip
    assert where[case] in line, line


def test_pubmedqa_scores_equal_its_script_on_the_same_file(cli, shared_data, tmp_path) -> None:
    truth_file = shared_data / "pubmedqa" / "test_ground_truth.json"
    _items, preds, submitted = pubmedqa_run(json.loads(truth_file.read_text()))
    path = tmp_path / "predictions.json"
    path.write_text(json.dumps(submitted))
    printed = pubmedqa_script(path, truth_file, tmp_path)
    data = ["--dataset", "pubmedqa", "--data", str(shared_data / "pubmedqa" / "ori_pqal.json"),
            "--split", "test"]  # fmt: skip
    got = json.loads(_score(cli, data, path, "--json").stdout)["methods"]["predictions"]
    assert f"{got['accuracy']:.6f}" == printed["Accuracy"]
    assert f"{got['macro_f1']:.6f}" == printed["Macro-F1"]
    # biorag's own records of the same answers (an unrecorded question as an empty answer)
    recs = [{"question_id": p, "method": "m", **preds.get(p, {"prediction": ""})}
            for p in submitted]  # fmt: skip
    ours = _score(cli, data, _lines(tmp_path / "predictions.jsonl", recs), "--json")
    mine = json.loads(ours.stdout)["methods"]["m"]
    assert (mine["accuracy"], mine["macro_f1"]) == (got["accuracy"], got["macro_f1"])
    assert mine["unparseable"] > 0  # which a {pmid: label} file cannot say


def test_bioasq_scores_equal_the_jars_on_the_same_file(cli, shared_data, tmp_path) -> None:
    golden = shared_data / "mirage/rawdata/bioasq" / BATCHES[0]
    items, preds, submission = bioasq_run(golden)
    for row in submission[::5]:  # answered without snippets: the jar counts none found
        del row["snippets"]
        del preds[row["id"]]["snippets"]
    system = tmp_path / "system.json"
    system.write_text(json.dumps({"questions": submission}))
    jar = {**bioasq_jar("-phaseA", golden, system), **bioasq_jar("-phaseB", golden, system)}
    data = ["--dataset", "bioasq", "--data", str(golden)]
    got = json.loads(_score(cli, data, system, "--json").stdout)["methods"]["system"]
    assert differences(jar, got, {**BIOASQ_PHASE_A, **BIOASQ_PHASE_B}) == {}
    read = read_predictions_file(system, items)
    assert {r["question_id"]: r["snippets"] for r in read.records}[submission[0]["id"]] == []
    # the same answers as biorag's records score the same
    recs = [{"question_id": q, "method": "m", "error": None, **p} for q, p in preds.items()]
    ours = _score(cli, data, _lines(tmp_path / "predictions.jsonl", recs), "--json")
    assert differences(jar, json.loads(ours.stdout)["methods"]["m"], BIOASQ_PHASE_B) == {}
    assert differences(jar, json.loads(ours.stdout)["methods"]["m"], BIOASQ_PHASE_A) == {}


def test_a_limited_runs_predictions_score_on_the_runs_questions(cli, tmp_path, pubmedqa) -> None:
    """A run directory's predictions.jsonl (run.json beside it) is scored on the run's
    questions: its --limit read from run.json; a --limit or --setting other than the run's is
    refused; the directory itself names the file too."""
    ran = cli("eval", *pubmedqa, "--methods", "closed-book", "--limit", "4", "--out", "run",
              "--json", llm_backend="mock", llm_mock_script="dry-run")  # fmt: skip
    assert ran.exit_code == 0, ran.output
    metrics = json.loads(ran.stdout)["methods"]["closed-book"]
    for where in ("run/predictions.jsonl", "run"):
        r = _score(cli, pubmedqa, tmp_path / where, "--json")
        assert r.exit_code == 0, r.output
        got = json.loads(r.stdout)
        assert got["n_items"] == 4 and got["limit"] == 4 and got["run"] == str(tmp_path / "run")
        mine = got["methods"]["closed-book"]
        assert (mine["accuracy"], mine["macro_f1"]) == (metrics["accuracy"], metrics["macro_f1"])
    assert _score(cli, pubmedqa, tmp_path / "run", "--limit", "4").exit_code == 0
    line = _error(_score(cli, pubmedqa, tmp_path / "run", "--limit", "5"))
    assert "run was run with limit 4, not 5; leave it out" in line
    assert line.endswith("(option --limit)"), line
    line = _error(_score(cli, pubmedqa, tmp_path / "run", "--setting", "open"))
    assert "run was run with setting None, not 'open'" in line, line
    # a copy of the file, away from its run.json, is scored on the questions given
    copy = tmp_path / "copy.jsonl"
    copy.write_text((tmp_path / "run" / "predictions.jsonl").read_text())
    assert "no prediction by closed-book for question" in _error(_score(cli, pubmedqa, copy))
    assert json.loads(_score(cli, pubmedqa, copy, "--limit", "4", "--json").stdout)["n_items"] == 4
    given = _score(cli, pubmedqa, copy, "--limit", "4", "--setting", "reasoning-required", "--json")
    assert json.loads(given.stdout)["setting"] == "reasoning-required"


def test_a_file_with_a_byte_order_mark_scores(cli, tmp_path, pubmedqa) -> None:
    path = tmp_path / "predictions.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in _records()), encoding="utf-8-sig")
    assert path.read_bytes().startswith(b"\xef\xbb\xbf")
    r = _score(cli, pubmedqa, path, "--json")
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["methods"]["closed-book"]["accuracy"] == 1.0
    submission = tmp_path / "submission.json"
    truth = {p: v["final_decision"] for p, v in PQAL.items()}
    submission.write_text(json.dumps(truth), encoding="utf-8-sig")
    assert json.loads(_score(cli, pubmedqa, submission, "--json").stdout)["n_items"] == 6


def test_repeated_question_ids_are_refused(cli, tmp_path, pubmedqa, monkeypatch) -> None:
    """The loaders keep one record per id; data that still repeats one is refused as the runner
    refuses it, before any score."""
    from biorag.eval.run import questions

    real = questions.load_dataset

    def repeating(*args, **kwargs):
        loaded = real(*args, **kwargs)
        return SimpleNamespace(items=[*loaded.items, loaded.items[0]], skipped=[], info={})

    monkeypatch.setattr(questions, "load_dataset", repeating)
    line = _error(_score(cli, pubmedqa, _lines(tmp_path / "p.jsonl", _records())))
    assert "pubmedqa: question ids are not unique" in line, line


def test_a_run_that_cannot_be_told_apart_is_refused(cli, tmp_path, pubmedqa) -> None:
    """Another dataset, data giving another number of questions, or an old run that recorded
    only the first five ids of those it left out: one line each, naming what to do."""
    run = tmp_path / "run"
    run.mkdir()
    path = _lines(run / "predictions.jsonl", _records())
    cfg = {"dataset": "pubmedqa", "split": "test", "setting": None, "limit": None, "n_items": 6}
    (run / "run.json").write_text(json.dumps({**cfg, "dataset": "bioasq"}))
    assert "is a run on bioasq, not pubmedqa" in _error(_score(cli, pubmedqa, path))
    (run / "run.json").write_text(json.dumps({**cfg, "n_items": 8}))
    line = _error(_score(cli, pubmedqa, path))
    assert "gave 6 questions but the run in" in line and line.endswith("(option --data)"), line
    (run / "run.json").write_text(json.dumps({**cfg, "n_items": 0}))
    guard = {"policy": "exclude", "overlapping": 6, "examples": list(PQAL)[:5]}
    (run / "metrics.json").write_text(json.dumps({"kg_overlap": guard}))
    line = _error(_score(cli, pubmedqa, path))
    assert (
        "left out 6 questions that went into a knowledge graph but recorded the ids of "
        "only 5" in line
    ), line
    assert "resume the run (its own command) with this biorag" in line, line
    (run / "run.json").write_text(json.dumps({**cfg, "overlap_excluded": list(PQAL)[:2],
                                              "n_items": 4}))  # fmt: skip
    assert "question 100 is not a question of the dataset" in _error(_score(cli, pubmedqa, path))
