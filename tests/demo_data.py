"""The bundled demo sample as test inputs: its questions, and PubMedQA-format files of them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

DEMO = Path(__file__).resolve().parents[1] / "src" / "biorag" / "demo" / "data"
OPTIONS = {"A": "yes", "B": "no", "C": "maybe"}


def demo_questions(n: int) -> list[dict[str, Any]]:
    rows = (DEMO / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(x) for x in rows[:n]]


def write_pqal(path: Path, n: int) -> list[str]:
    """A PubMedQA-format (PQA-L) file of the first ``n`` bundled questions, each with its own
    abstract; their ids."""
    docs = {
        d["id"]: d
        for d in map(json.loads, (DEMO / "pubmedqa_sample.jsonl").read_text().splitlines())
    }
    data = {
        q["id"]: {
            "QUESTION": q["question"],
            "CONTEXTS": [docs[q["id"]]["text"]],
            "LABELS": ["BACKGROUND"],
            "final_decision": OPTIONS[q["gold"]],
        }
        for q in demo_questions(n)
    }
    path.write_text(json.dumps(data), encoding="utf-8")
    return list(data)
