"""BioASQ snippet measures: character overlap with the gold snippets, chunks mapped back to the
article through the pooled corpus's offsets, end to end through ``biorag eval``."""

from __future__ import annotations

import json
import math

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
    m = snippet_measures([gold, gold], [[S("1", 50, 150)], []], official=False)
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
    # what the official evaluator reads: the offsets as given, the leading space included
    assert items["q2"].meta["gold_snippets_official"] == [
        {**S("22", 0, 48, "title"), "end_section": "title"}
    ]


def test_official_sections_are_read_after_their_first_dot() -> None:
    from biorag.eval.metrics.snippets_official import official_snippet_scores as off

    # readSnippets keeps what follows the first dot: "sections.0" is section "0", and a "0"
    # snippet overlaps an "abstract" one (the evaluator's one-way rule)
    assert off([S("1", 0, 9, "sections.0")], [S("1", 0, 9, "0")])[:2] == (1.0, 1.0)
    assert off([S("1", 0, 9, "abstract")], [S("1", 0, 9, "sections.0")])[:2] == (1.0, 1.0)
    assert off([S("1", 0, 9, "sections.0")], [S("1", 0, 9, "abstract")])[:2] == (0.0, 0.0)
    # a snippet that ends in another section than it begins in matches only such a one
    across = {**S("1", 0, 9, "title"), "end_section": "abstract"}
    assert off([across], [S("1", 0, 9, "title")])[:2] == (0.0, 0.0)
    assert off([across], [across])[:2] == (1.0, 1.0)


def test_official_reading_follows_the_evaluators_source() -> None:
    from biorag.eval.metrics.snippets_official import official_snippet_scores as off

    gold = [S("1", 0, 100)]  # 101 characters: both offsets inclusive
    p, r, f, ap = off(gold, [S("1", 50, 150)])
    assert (p, r) == (51 / 101, 51 / 101) and f == pytest.approx(51 / 101)
    assert ap == pytest.approx(51 / 101)  # one relevant snippet, over min(10, 1 gold)
    # touching snippets overlap by one character (biorag's reading: none)
    assert off(gold, [S("1", 100, 110)])[:2] == (1 / 11, 1 / 101)
    assert snippet_prf(gold, [S("1", 100, 110)])[:2] == (0.0, 0.0)
    # relevance for AP is "a gold snippet in the same article", overlapping or not
    p, r, f, ap = off(gold, [S("1", 200, 209), S("1", 0, 9)])
    assert p == pytest.approx(10 / 20)
    assert ap == pytest.approx(0 / 10 + 10 / 20)  # both count as relevant
    assert off(gold, [S("2", 0, 9), S("1", 0, 9)])[3] == pytest.approx(10 / 20)
    # AP divides by min(10, gold snippets after merging): here two gold snippets
    two = [S("1", 0, 100), S("3", 0, 9)]
    assert off(two, [S("1", 0, 100)])[3] == pytest.approx(1.0 / 2)
    # overlapping submissions merge in first-appearance order: AP reads the merged list
    p, r, f, ap = off(gold, [S("1", 0, 9), S("2", 0, 9), S("1", 5, 19)])
    assert p == pytest.approx(20 / 30) and ap == pytest.approx(1.0)
    assert off(gold, []) == (0.0, 0.0, 0.0, 0.0)


def test_official_and_biorag_measures_over_questions() -> None:
    gold = [S("1", 0, 99)]
    preds = [[S("1", 0, 99)], [S("2", 0, 99)]]
    off = snippet_measures([gold, gold], preds)
    assert off["n"] == 2 and (off["mean_precision"], off["mean_recall"]) == (0.5, 0.5)
    assert off["map"] == pytest.approx(0.5)
    # GMAP: exp(mean(log(AP + 1e-5))), a question with AP 0 pulls it down
    assert off["gmap"] == pytest.approx(math.exp((math.log(1 + 1e-5) + math.log(1e-5)) / 2))
    ours = snippet_measures([gold, gold], preds, official=False)
    assert ours["map"] == pytest.approx(0.5) and "biorag" in ours["definition"]
    # no gold snippet: the evaluator's AP is 0/0, which adds 0 to MAP and to GMAP's log sum
    nan = snippet_measures([[], gold], [[S("1", 0, 9)], [S("1", 0, 99)]])
    assert nan["map"] == pytest.approx(0.5)
    assert nan["gmap"] == pytest.approx(math.exp(math.log(1 + 1e-5) / 2))
    # biorag's reading keeps the first 10 snippets only, the official one all of them
    many = [S("2", 0, 9)] * 10 + [S("1", 0, 99)]
    assert snippet_measures([gold], [many], official=False)["mean_recall"] == 0.0
    assert snippet_measures([gold], [many])["mean_recall"] == 1.0
