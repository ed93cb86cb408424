"""An eval refuses, leaves out or reports the questions whose answers went into the KG it uses."""

from __future__ import annotations

import json

import pytest

from biorag.corpus.datasets.base import QAItem
from biorag.errors import BioragError
from biorag.eval.run.leakage import check_overlap, gold_answer_text
from biorag.kg.extract_triplets import QAPair
from biorag.kg.provenance import load_provenance, record_provenance, text_hash

DRUGS = ["metformin", "insulin", "aspirin", "warfarin", "heparin", "atenolol"]


def _medmcqa(path, n: int = 6):
    rows = []
    for i in range(n):
        rows.append(
            {
                "id": f"q{i}",
                "question": f"Which drug is the first line treatment of condition number {i}?",
                "opa": DRUGS[i],
                "opb": "placebo",
                "opc": "surgery",
                "opd": "nothing",
                "cop": 1,
                "choice_type": "single",
                "exp": f"{DRUGS[i].title()} treats condition number {i}.",
            }
        )
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _item(qid: str, question: str, answer: str) -> QAItem:
    return QAItem(
        id=qid, dataset="medmcqa", question=question, options={"A": answer, "B": "x"}, gold="A"
    )


def test_text_hash_ignores_case_spacing_and_punctuation():
    assert text_hash("Which drug?  Metformin!") == text_hash("which drug metformin")
    assert text_hash("a", "b") != text_hash("a b")


def test_provenance_accumulates_over_builds_and_overlap_is_by_id_question_or_pair(tmp_path):
    record_provenance(tmp_path, [QAPair("q1", "What treats gout?", "allopurinol")], [], {})
    record_provenance(tmp_path, [QAPair("q2", "What treats angina?", "nitrates")], ["r9"], {})
    prov = load_provenance(tmp_path)
    assert prov.ids == {"q1", "q2", "r9"} and len(prov.builds) == 2 and prov.complete
    items = [
        _item("q1", "Another question entirely?", "x"),  # same id
        _item("z1", "what treats GOUT", "colchicine"),  # same question text
        _item("z2", "Which of these treats angina pectoris?", "nitrates"),  # neither
        _item("r9", "A paragraph's id?", "y"),  # an id of a non-QA unit
    ]
    check = check_overlap(items, [tmp_path], "exclude")
    assert check.overlapping == ["q1", "z1", "r9"]
    assert [it.id for it in check.items] == ["z2"]
    with pytest.raises(BioragError, match="overlap policy to exclude"):
        check_overlap(items, [tmp_path], "refuse")
    allowed = check_overlap(items, [tmp_path], "allow")
    assert len(allowed.items) == 4 and "not held out" in allowed.note()


def test_gold_answer_text_reads_options_and_lists():
    assert gold_answer_text(_item("a", "q", "metformin")) == "metformin"
    listed = QAItem(id="b", dataset="bioasq", question="q", gold=[["BRCA1", "brca-1"]],
                    question_type="list")  # fmt: skip
    assert gold_answer_text(listed) == "BRCA1"


def test_eval_on_the_questions_the_kg_was_built_from(cli, tmp_path):
    data = _medmcqa(tmp_path / "dev.jsonl")
    built = cli("kg", "build", "--from", str(data), "--format", "medmcqa", "--half", "second",
                "--out", "kg", "--json")  # fmt: skip
    assert built.exit_code == 0, built.output
    assert (tmp_path / "kg" / "provenance.json").is_file()
    base = ["eval", "--dataset", "medmcqa", "--data", str(data), "--methods", "vectorgraphrag",
            "--method-options", json.dumps({"vectorgraphrag": {"kg": "kg"}})]  # fmt: skip
    refused = cli(*base, "--out", "run_refused")
    assert refused.exit_code != 0
    assert "3 of 6 questions went into the knowledge graph kg" in refused.stderr
    assert "Traceback" not in refused.output
    assert not (tmp_path / "run_refused" / "predictions.jsonl").exists()

    kept = cli(*base, "--exclude-overlap", "--out", "run_excluded", "--json")
    assert kept.exit_code == 0, kept.output
    metrics = json.loads(kept.stdout)
    assert metrics["n_items"] == 3
    assert metrics["kg_overlap"]["overlapping"] == 3 and metrics["kg_overlap"]["scored"] == 3
    lines = (tmp_path / "run_excluded" / "predictions.jsonl").read_text().splitlines()
    answered = [json.loads(x)["question_id"] for x in lines]
    assert sorted(answered) == ["q0", "q1", "q2"]
    report = (tmp_path / "run_excluded" / "report.md").read_text()
    assert "3 questions went into kg and were left out" in report
    run_json = tmp_path / "run_excluded" / "run.json"
    assert json.loads(run_json.read_text())["overlap_excluded"] == ["q3", "q4", "q5"]
    # scored again from its files: on the run's questions, the excluded ones left out again
    score = ["eval", "score", "--dataset", "medmcqa", "--data", str(data), "--predictions",
             "run_excluded/predictions.jsonl", "--json"]  # fmt: skip
    scored = cli(*score)
    assert scored.exit_code == 0, scored.output
    got = json.loads(scored.stdout)
    assert got["n_items"] == 3 and got["excluded"] == 3
    assert got["methods"]["vectorgraphrag"] == metrics["methods"]["vectorgraphrag"]["scores"]
    # a run recorded before run.json kept the ids: metrics.json shows all three
    cfg = json.loads(run_json.read_text())
    del cfg["overlap_excluded"]
    run_json.write_text(json.dumps(cfg))
    assert json.loads(cli(*score).stdout)["n_items"] == 3

    allowed = cli(*base, "--allow-overlap", "--out", "run_allowed", "--json")
    assert allowed.exit_code == 0, allowed.output
    assert json.loads(allowed.stdout)["n_items"] == 6
    assert "not held out" in (tmp_path / "run_allowed" / "report.md").read_text()


def _rows(path, rows):
    path.write_text(
        "".join(
            json.dumps({"id": i, "question": q, "opa": a, "opb": "placebo", "opc": "surgery",
                        "opd": "nothing", "cop": 1, "choice_type": "single",
                        "exp": f"{a} is the answer."}) + "\n"
            for i, q, a in rows
        ),
        encoding="utf-8",
    )  # fmt: skip
    return path


def test_eval_on_paraphrases_of_the_kg_questions(cli, tmp_path):
    """Reworded questions (other ids, other words) of the KG's source questions: the eval
    refuses them as it refuses exact repeats, and --exclude-overlap leaves them out."""
    kg_data = _rows(tmp_path / "train.jsonl", [
        ("t1", "What is the drug of choice for bacterial vaginosis in pregnancy?", "Metronidazole"),
        ("t2", "Which vitamin deficiency causes scurvy?", "Vitamin C"),
    ])  # fmt: skip
    built = cli("kg", "build", "--from", str(kg_data), "--format", "medmcqa", "--out", "kg")
    assert built.exit_code == 0, built.output
    dev = _rows(tmp_path / "dev.jsonl", [
        ("d1", "Drug of choice for bacterial vaginosis during pregnancy is:", "Metronidazole"),
        ("d2", "Scurvy is caused by a deficiency of which vitamin?", "Vitamin C"),
        ("d3", "Which vitamin deficiency causes rickets?", "Vitamin D"),
    ])  # fmt: skip
    base = ["eval", "--dataset", "medmcqa", "--data", str(dev), "--methods", "vectorgraphrag",
            "--method-options", json.dumps({"vectorgraphrag": {"kg": "kg"}})]  # fmt: skip
    refused = cli(*base, "--out", "run_refused")
    assert refused.exit_code != 0
    assert "2 of 3 questions went into the knowledge graph kg" in refused.stderr
    assert "2 of them are paraphrases" in refused.stderr and "Traceback" not in refused.output
    kept = cli(*base, "--exclude-overlap", "--out", "run_excluded", "--json")
    assert kept.exit_code == 0, kept.output
    block = json.loads(kept.stdout)["kg_overlap"]
    assert block["near_duplicates"] == 2 and block["exact"] == 0 and block["scored"] == 1
    assert {n["question_id"]: n["kg_question_id"] for n in block["near_examples"]} == {
        "d1": "t1",
        "d2": "t2",
    }
    report = (tmp_path / "run_excluded" / "report.md").read_text()
    assert "2 questions went into kg and were left out" in report
    assert "0 exact repeats, 2 paraphrases at cosine >= 0.92" in report
