"""``biorag eval`` with bad input: a record with an empty question is skipped and reported by
file and line; an LLM server that is down ends the run with one line naming llm.base_url."""

from __future__ import annotations

import json
import socket


def _medqa(path, n: int, empty_at: int | None = None):
    lines = []
    for i in range(n):
        q = "   " if i == empty_at else f"Which drug treats condition {i}?"
        opts = {"A": f"drug {i}", "B": "placebo", "C": "nothing", "D": "surgery"}
        lines.append(json.dumps({"question": q, "options": opts, "answer_idx": "A"}))
    path.write_text("\n".join(lines) + "\n")
    return path


def test_an_empty_question_is_skipped_and_reported_with_its_line(cli, tmp_path):
    data = _medqa(tmp_path / "medqa.jsonl", 4, empty_at=1)
    res = cli(
        *("eval", "--dataset", "medqa", "--data", str(data), "--methods", "closed-book"),
        *("--out", "run", "--json"),
        llm_backend="mock",
        llm_mock_script="dry-run",
    )
    assert res.exit_code == 0, res.output
    assert "skipped 1 record(s) (field '…' is empty: 1); the first 1:" in res.stderr
    assert f"{data}:2: line 2: field 'question' is empty" in res.stderr
    listed = tmp_path / "run" / "skipped.jsonl"
    assert "every skipped record, with its file and line: run/skipped.jsonl" in res.stderr
    assert [json.loads(x)["line"] for x in listed.read_text().splitlines()] == [2]
    metrics = json.loads(res.stdout)
    assert metrics["n_items"] == 3 and metrics["accounting"]["wall_s"] > 0
    assert metrics["accounting"]["total"]["calls"] == 6
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["skipped_records"] == 1 and run["skipped_by_kind"] == {"field '…' is empty": 1}


def test_eval_with_the_llm_server_down_is_one_line(cli, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = _medqa(tmp_path / "medqa.jsonl", 30)
    res = cli(
        *("eval", "--dataset", "medqa", "--data", str(data), "--methods", "closed-book"),
        *("--out", "run", "--concurrency", "1"),
        llm_backend="openai",
        llm_base_url=f"http://127.0.0.1:{port}/v1",
        llm_model="m",
        llm_max_retries=0,
    )
    assert res.exit_code == 2, res.output
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in res.stderr
    assert "failed answers in a row" in errors[0] and "llm.base_url" in errors[0]
    recs = (tmp_path / "run" / "predictions.jsonl").read_text().splitlines()
    assert len(recs) == 25 and all("llm.base_url" in json.loads(r)["error"] for r in recs)


def test_scoring_mode_rescores_a_finished_run_without_answering_again(cli, tmp_path):
    data = tmp_path / "ori_pqal.json"
    recs = {
        str(100 + i): {
            "QUESTION": f"Does drug {i} lower blood pressure?",
            "CONTEXTS": [f"Drug {i} lowered blood pressure in a trial."],
            "LABELS": ["RESULTS"],
            "MESHES": [],
            "YEAR": "2020",
            "LONG_ANSWER": "It does.",
            "final_decision": ["yes", "no", "maybe"][i % 3],
        }
        for i in range(6)
    }
    data.write_text(json.dumps(recs))
    args = ("eval", "--dataset", "pubmedqa", "--data", str(data), "--methods", "closed-book",
            "--setting", "reasoning-required", "--out", "run", "--json")  # fmt: skip
    first = cli(*args, "--scoring", "biorag", llm_backend="mock", llm_mock_script="dry-run")
    assert first.exit_code == 0, first.output
    assert json.loads(first.stdout)["scoring"] == "biorag"
    again = cli(*args, llm_backend="mock", llm_mock_script="dry-run")
    assert again.exit_code == 0, again.output
    metrics = json.loads(again.stdout)
    assert metrics["scoring"] == "official"
    assert metrics["methods"]["closed-book"]["scores"]["scoring"] == "official"
    assert "0 answers now" in again.stderr
    assert "Scoring: official" in (tmp_path / "run" / "report.md").read_text()
    bad = cli(*args, "--scoring", "lenient", llm_backend="mock", llm_mock_script="dry-run")
    assert bad.exit_code != 0 and "scoring must be one of official, biorag" in bad.stderr
    assert bad.stderr.rstrip().endswith("(option --scoring)")


def test_mashqa_sentence_retrieval_is_scored_from_the_picked_sentences(cli, tmp_path):
    sents = [
        "High blood pressure often has no symptoms.",
        "Lowering salt intake reduces blood pressure.",
        "Regular exercise also helps lower blood pressure.",
        "Headaches are rarely caused by it.",
    ]
    qa = {"id": "m1", "question": "How can I lower my blood pressure?", "is_impossible": False,
          "answers": [{"text": " ".join(sents[1:3]), "answer_sent_ids": [1, 2]}]}  # fmt: skip
    data = tmp_path / "mash.json"
    para = {"context": " ".join(sents), "sent_list": sents, "qas": [qa]}
    data.write_text(json.dumps({"data": [{"title": "Hypertension", "paragraphs": [para]}]}))
    res = cli("eval", "--dataset", "mashqa", "--data", str(data), "--setting", "context",
              "--methods", "retrieve-read", "--out", "run", "--json")  # fmt: skip
    assert res.exit_code == 0, res.output
    scores = json.loads(res.stdout)["methods"]["retrieve-read"]["scores"]["sentences"]
    record = json.loads((tmp_path / "run" / "predictions.jsonl").read_text())
    assert set(sents[1:3]) <= set(record["sentences"])  # the floor's picked sentences
    assert scores["recall"] == 1.0 and scores["precision"] == 2 / len(record["sentences"])


def test_mask_entities_masks_question_options_and_passages_together(cli, tmp_path):
    data = tmp_path / "ori_pqal.json"
    recs = {
        "201": {
            "QUESTION": "Does metformin lower HbA1c in type 2 diabetes?",
            "CONTEXTS": ["Metformin lowered HbA1c in 300 patients with type 2 diabetes."],
            "LABELS": ["RESULTS"], "MESHES": [], "YEAR": "2020",
            "LONG_ANSWER": "Yes.", "final_decision": "yes",
        }
    }  # fmt: skip
    data.write_text(json.dumps(recs))
    base = ("eval", "--dataset", "pubmedqa", "--data", str(data), "--methods", "retrieve-read",
            "--json")  # fmt: skip
    res = cli(*base, "--setting", "reasoning-required", "--mask-entities", "--out", "masked")
    assert res.exit_code == 0, res.output
    metrics = json.loads(res.stdout)
    assert metrics["masking"]["items"] == 1 and metrics["masking"]["floor"] is True
    assert metrics["masking"]["labels"] >= 1
    record = json.loads((tmp_path / "masked" / "predictions.jsonl").read_text())
    assert "metformin" not in record["context"].lower() and "<Chemical1>" in record["context"]
    run = json.loads((tmp_path / "masked" / "run.json").read_text())
    assert run["mask_entities"] is True
    # resuming the masked run without the flag is another configuration
    again = cli(*base, "--setting", "reasoning-required", "--out", "masked")
    assert again.exit_code != 0 and "mask_entities" in again.stderr


def test_mask_entities_masks_retrieved_passages_with_the_questions_labels(cli, tmp_path):
    data = tmp_path / "ori_pqal.json"
    recs = {
        "201": {
            "QUESTION": "Does metformin lower HbA1c in type 2 diabetes?",
            "CONTEXTS": ["unused in the open setting"],
            "LABELS": ["RESULTS"], "MESHES": [], "YEAR": "2020",
            "LONG_ANSWER": "Yes.", "final_decision": "yes",
        },
        "202": {  # no entity in the question: what it retrieves is masked all the same
            "QUESTION": "Is it lowered?", "CONTEXTS": ["unused"], "LABELS": ["RESULTS"],
            "MESHES": [], "YEAR": "2020", "LONG_ANSWER": "Yes.", "final_decision": "yes",
        },
    }  # fmt: skip
    data.write_text(json.dumps(recs))
    corpus = tmp_path / "corpus.jsonl"
    docs = [
        {"id": "d1", "title": "", "text": "Metformin lowered HbA1c in type 2 diabetes patients."},
        {"id": "d2", "title": "", "text": "Insulin glargine was compared with metformin."},
    ]
    corpus.write_text("".join(json.dumps(d) + "\n" for d in docs))
    built = cli("index", "build", "--corpus", str(corpus), "--out", "idx")
    assert built.exit_code == 0, built.output
    base = ("eval", "--dataset", "pubmedqa", "--data", str(data), "--setting", "open",
            "--index", "idx", "--mask-entities", "--json")  # fmt: skip
    res = cli(*base, "--methods", "retrieve-read", "--out", "open")
    assert res.exit_code == 0, res.output
    lines = (tmp_path / "open" / "predictions.jsonl").open()
    # records are appended as answers finish, so their order is not the questions' order
    records = sorted((json.loads(x) for x in lines), key=lambda r: r["question_id"])
    assert [r["question_id"] for r in records] == ["201", "202"]
    assert all(r["context"] and "metformin" not in r["context"].lower() for r in records)
    record = records[0]
    # the retrieved passages carry the question's label for metformin, and new entities
    # (insulin glargine) a label of their own after it
    assert "<Chemical1>" in record["context"] and "<Chemical2>" in record["context"]
    assert all("metformin" not in d.lower() for d in record["documents"] if isinstance(d, str))
    # IP-RAR searches its own way (its levels' queries): masked all the same
    own = cli(*base, "--methods", "iprar", "--out", "iprar")
    assert own.exit_code == 0, own.output
    lines = (tmp_path / "iprar" / "predictions.jsonl").open()
    records = sorted((json.loads(x) for x in lines), key=lambda r: r["question_id"])
    assert all(r["context"] and "metformin" not in r["context"].lower() for r in records)
    assert "<Chemical1>" in records[0]["context"]


def test_components_scores_claims_runs_and_resumes(cli, tmp_path):
    data = tmp_path / "ori_pqal.json"
    recs = {
        str(300 + i): {
            "QUESTION": f"Does metformin lower HbA1c in trial {i}?",
            "CONTEXTS": [f"Metformin lowered HbA1c by {i + 1}% in adults with type 2 diabetes.",
                         "Metformin also reduced body weight in these adults."],
            "LABELS": ["RESULTS", "RESULTS"], "MESHES": [], "YEAR": "2020",
            "LONG_ANSWER": "Yes.", "final_decision": "yes",
        }
        for i in range(3)
    }  # fmt: skip
    data.write_text(json.dumps(recs))
    args = ("eval", "components", "--dataset", "pubmedqa", "--data", str(data),
            "--setting", "reasoning-required", "--out", "comp", "--json")  # fmt: skip
    first = cli(*args, "--limit", "2", llm_backend="mock", llm_mock_script="dry-run")
    assert first.exit_code == 0, first.output
    summary = json.loads(first.stdout)
    assert summary["questions"] == 2 and summary["skipped"] == {}
    for key in (
        "reference_score",
        "semantic_similarity",
        "key_claim_retention",
        "faithfulness.claims",
        "relevancy.claims",
        "source_diversity.claims",
    ):
        assert summary["means"][key]["n"] == 2, key  # fmt: skip
    again = cli(*args, llm_backend="mock", llm_mock_script="dry-run")
    assert json.loads(again.stdout)["questions"] == 3
    lines = (tmp_path / "comp" / "components.jsonl").read_text().splitlines()
    assert len(lines) == 3  # the first two were not scored again
    floor = cli(*args[:-3], "--out", "comp_floor", "--json")  # no LLM: judged metrics skipped
    assert "needs a judge LLM" in json.loads(floor.stdout)["skipped"]["faithfulness"][0]
