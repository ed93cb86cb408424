"""A record whose question is empty or only whitespace is skipped, counted and reported with its
file and line (or key), like any malformed record; the others load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biorag.corpus.datasets import load_dataset

OPTS = {"A": "yes", "B": "no", "C": "maybe", "D": "none"}


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def medqa(q: str) -> dict:
    return {"question": q, "options": OPTS, "answer_idx": "A"}


def medmcqa(q: str) -> dict:
    return {"question": q, "opa": "a", "opb": "b", "opc": "c", "opd": "d", "cop": 1}


def biocdqa(q: str) -> dict:
    return {"question": q, "ideal_answer": "It does.", "documents_pid": ["1"]}


LOADERS = [("medqa", medqa), ("medmcqa", medmcqa), ("biocdqa", biocdqa)]


@pytest.mark.parametrize("name,make", LOADERS)
@pytest.mark.parametrize("empty", ["", "  \t "])
def test_jsonl_loaders_skip_an_empty_question(tmp_path, name, make, empty):
    records = [make("Does it work?"), make(empty), make("Does it help?")]
    for i, r in enumerate(records):
        if name != "medqa":
            r["id"] = f"r{i}"
    path = _jsonl(tmp_path / f"{name}.jsonl", records)
    res = load_dataset(name, path)
    assert [it.question for it in res.items] == ["Does it work?", "Does it help?"]
    assert res.info["skipped"] == 1
    (skip,) = res.skipped
    assert skip.where() == f"{path}:2" and "'question' is empty" in skip.reason


def test_mmlu_and_pubmedqa_skip_an_empty_question(tmp_path):
    csv = tmp_path / "anatomy_test.csv"
    csv.write_text('What is the aorta?,a,b,c,d,A\n"  ",a,b,c,d,B\nWhat is a vein?,a,b,c,d,C\n')
    res = load_dataset("mmlu", csv)
    assert len(res.items) == 2 and res.skipped[0].where() == f"{csv}:2"
    assert "empty question" in res.skipped[0].reason
    pq = {
        pmid: {
            "QUESTION": q,
            "CONTEXTS": ["c"],
            "LABELS": ["L"],
            "MESHES": [],
            "YEAR": "2000",
            "LONG_ANSWER": "a",
            "final_decision": "yes",
        }
        for pmid, q in (("1", "Does it?"), ("2", " "))
    }
    path = tmp_path / "ori_pqal.json"
    path.write_text(json.dumps(pq))
    res = load_dataset("pubmedqa", path)
    assert [it.id for it in res.items] == ["1"] and len(res.skipped) == 1
    assert "record 2" in res.skipped[0].reason and "empty 'QUESTION'" in res.skipped[0].reason
