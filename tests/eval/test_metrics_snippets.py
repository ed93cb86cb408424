"""BioASQ snippet measures: character overlap with the gold snippets, chunks mapped back to the
article through the pooled corpus's offsets, end to end through ``biorag eval``."""

from __future__ import annotations

import json

import pytest

from biorag.corpus.datasets import load_dataset
from biorag.corpus.loaders import load_corpus
from biorag.eval.metrics.snippets import chunk_snippets, snippet_measures, snippet_prf


def S(doc: str, b: int, e: int, section: str = "abstract") -> dict:
    return {"document": doc, "section": section, "begin": b, "end": e}


def test_overlap_precision_recall() -> None:
    gold = [S("1", 0, 100)]
    assert snippet_prf(gold, [S("1", 50, 150)]) == (0.5, 0.5, 0.5)
    assert snippet_prf(gold, [S("1", 0, 100), S("1", 20, 60)]) == (1.0, 1.0, 1.0)  # merged
    assert snippet_prf(gold, [S("1", 0, 100, "title")]) == (0.0, 0.0, 0.0)  # other section
    assert snippet_prf(gold, [S("2", 0, 100)]) == (0.0, 0.0, 0.0)  # other article
    assert snippet_prf(gold, []) == (0.0, 0.0, 0.0)
    p, r, f = snippet_prf([S("1", 0, 100), S("2", 0, 100)], [S("1", 0, 50)])
    assert (p, r) == (1.0, 0.25) and f == pytest.approx(0.4)
    m = snippet_measures([gold, gold], [[S("1", 50, 150)], []])
    assert (m["n"], m["mean_precision"], m["mean_recall"]) == (2, 0.25, 0.25)


def test_chunks_map_back_to_the_article() -> None:
    doc = {
        "source_id": "77",
        "spans": [(0, 10), (11, 31)],  # two snippets joined by "\n"
        "metadata": {"sections": ["title", "abstract"], "offsets": [[0, 10], [500, 520]]},
    }
    assert chunk_snippets([(5, 20, doc)]) == [
        S("77", 5, 10, "title"), S("77", 500, 509, "abstract")
    ]  # fmt: skip
    doc["metadata"]["offsets"] = [None, [500, 520]]
    assert chunk_snippets([(0, 31, doc)]) == [S("77", 500, 520)]


BIOASQ = {
    "questions": [
        {
            "id": "q1",
            "body": "Which enzyme drives liver fibrosis?",
            "type": "factoid",
            "documents": ["http://www.ncbi.nlm.nih.gov/pubmed/11"],
            "snippets": [
                {"text": "The enzyme KRX1 drives fibrosis of the liver.",
                 "document": "http://www.ncbi.nlm.nih.gov/pubmed/11",
                 "offsetInBeginSection": 120, "offsetInEndSection": 165,
                 "beginSection": "abstract", "endSection": "abstract"},
            ],
            "ideal_answer": ["KRX1."],
            "exact_answer": [["KRX1"]],
        },
        {
            "id": "q2",
            "body": "Does atorvastatin lower LDL cholesterol?",
            "type": "yesno",
            "documents": ["http://www.ncbi.nlm.nih.gov/pubmed/22"],
            "snippets": [
                {"text": " Atorvastatin lowers LDL cholesterol in adults.",
                 "document": "http://www.ncbi.nlm.nih.gov/pubmed/22",
                 "offsetInBeginSection": 0, "offsetInEndSection": 48,
                 "beginSection": "title", "endSection": "title"},
            ],
            "ideal_answer": ["Yes."],
            "exact_answer": "yes",
        },
    ]
}  # fmt: skip


def test_offsets_in_corpus_and_gold(tmp_path) -> None:
    data = tmp_path / "11B1_golden.json"
    data.write_text(json.dumps(BIOASQ))
    docs = {d.source_id: d for d in load_corpus(data, fmt="bioasq").documents}
    assert docs["11"].metadata["offsets"] == [[120, 165]]
    n = len(BIOASQ["questions"][1]["snippets"][0]["text"].strip())
    assert docs["22"].metadata["offsets"] == [[1, 1 + n]]  # the leading space is not counted
    items = {it.id: it for it in load_dataset("bioasq", data).items}
    assert items["q2"].meta["gold_snippet_spans"] == [S("22", 1, 1 + n, "title")]
