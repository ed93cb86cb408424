"""Paraphrased repeats of a KG's source questions: found by embedding similarity (the bundled
MiniLM), refused, excluded or reported like exact repeats; KGs that kept no source questions
are reported as checked by ids and hashes only."""

from __future__ import annotations

import json

import pytest

from biorag.corpus.datasets.base import QAItem
from biorag.errors import BioragError
from biorag.eval.run.leakage import check_overlap
from biorag.eval.run.near_duplicates import near_duplicates
from biorag.kg.extract_triplets import QAPair
from biorag.kg.provenance import PROVENANCE_FILE, QUESTIONS_FILE, load_provenance, record_provenance

SOURCES = [
    QAPair("k1", "What is the drug of choice for bacterial vaginosis in pregnancy?",
           "metronidazole"),
    QAPair("k2", "Which enzyme is inhibited by metformin in hepatocytes?", "complex I"),
    QAPair("k3", "Which vitamin deficiency causes scurvy?", "vitamin C"),
    QAPair("k4", "Which of the following is not true about Vibrio cholerae?",
           "It is a gram positive rod"),
    QAPair("k5", "Is zelocitinib effective for liver fibrosis?", "yes"),
]  # fmt: skip
# the evaluated questions: (id, question, gold answer, a paraphrase of a source question?)
EVALUATED = [
    ("e1", "Drug of choice for bacterial vaginosis during pregnancy is:", "Metronidazole", True),
    ("e2", "Metformin inhibits which enzyme in hepatocytes?", "mitochondrial complex I", True),
    ("e3", "Scurvy is caused by a deficiency of which vitamin?", "Vitamin C (ascorbic acid)", True),
    # the same stem with other options: its answer is not in the KG
    ("e4", "Which is not true about Vibrio cholerae?", "It cannot survive outside the host", False),
    ("e5", "Which vitamin deficiency causes rickets?", "vitamin D", False),  # one entity apart
    ("e6", "Is quobrutinib effective for liver fibrosis?", "yes", False),
    ("e7", "Is zelocitinib effective for the treatment of liver fibrosis?", "yes", True),
]


@pytest.fixture(scope="module")
def minilm():
    from biorag.embed.st_embedder import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder()


def _items() -> list[QAItem]:
    return [
        QAItem(id=i, dataset="medmcqa", question=q, options={"A": a, "B": "none of these"},
               gold="A")
        for i, q, a, _ in EVALUATED
    ]  # fmt: skip


def _paraphrases() -> list[str]:
    return [i for i, _, _, near in EVALUATED if near]


def test_provenance_keeps_the_source_questions_with_their_answers(tmp_path):
    record_provenance(tmp_path, SOURCES[:2], [], {"source": "a"})
    record_provenance(tmp_path, SOURCES[1:3], ["r9"], {"source": "b"})  # k2 again: kept once
    prov = load_provenance(tmp_path)
    assert prov.questions == [(p.id, p.question, p.answer) for p in SOURCES[:3]]
    assert prov.questions_complete and [b["questions"] for b in prov.builds] == [2, 2]
    assert json.loads((tmp_path / PROVENANCE_FILE).read_text())["questions_file"] == QUESTIONS_FILE


def test_paraphrases_are_found_and_refused_excluded_or_allowed(tmp_path, minilm):
    record_provenance(tmp_path, SOURCES, [], {})
    items = _items()
    excluded = check_overlap(items, [tmp_path], "exclude", paraphrases=minilm)
    assert excluded.overlapping == _paraphrases()
    assert [it.id for it in excluded.items] == ["e4", "e5", "e6"]
    by_id = {n["question_id"]: n for n in excluded.near}
    assert {i: n["kg_question_id"] for i, n in by_id.items()} == {
        "e1": "k1",
        "e2": "k2",
        "e3": "k3",
        "e7": "k5",
    }
    assert all(n["cosine"] >= 0.92 and n["cosine_with_answers"] >= 0.92 for n in excluded.near)
    block = excluded.to_dict()
    assert block["near_duplicates"] == 4 and block["exact"] == 0 and block["threshold"] == 0.92
    assert block["kgs"][0]["paraphrases_checked"] and block["near_examples"][0]["kg_question"]
    assert "(overlap policy exclude; 0 exact repeats, 4 paraphrases at cosine >= 0.92)" in (
        excluded.note() or ""
    )
    with pytest.raises(BioragError, match="4 of them are paraphrases") as refused:
        check_overlap(items, [tmp_path], "refuse", paraphrases=minilm)
    assert "e1 'Drug of choice for bacterial vaginosis" in str(refused.value)
    allowed = check_overlap(items, [tmp_path], "allow", paraphrases=minilm)
    assert len(allowed.items) == 7 and "4 paraphrases" in (allowed.note() or "")
    strict = check_overlap(items, [tmp_path], "exclude", paraphrases=minilm, threshold=0.99)
    assert strict.overlapping == []  # the threshold is what decides


def test_exact_repeats_and_paraphrases_are_counted_apart(tmp_path, minilm):
    record_provenance(tmp_path, SOURCES, [], {})
    repeat = QAItem(id="e0", dataset="medmcqa", question=SOURCES[2].question.upper(),
                    options={"A": "x", "B": "y"}, gold="A")  # fmt: skip
    check = check_overlap([repeat, *_items()], [tmp_path], "exclude", paraphrases=minilm)
    assert check.overlapping == ["e0", *_paraphrases()]
    assert check.to_dict()["exact"] == 1 and check.kgs[0]["overlapping"] == 5


def test_a_kg_without_kept_questions_is_checked_by_ids_and_hashes_only(tmp_path, minilm):
    record_provenance(tmp_path, SOURCES, [], {})
    # as a KG built before the source questions were kept
    data = json.loads((tmp_path / PROVENANCE_FILE).read_text())
    del data["questions_file"]
    for b in data["builds"]:
        del b["questions"]
    (tmp_path / PROVENANCE_FILE).write_text(json.dumps(data))
    (tmp_path / QUESTIONS_FILE).unlink()
    assert load_provenance(tmp_path).questions is None
    check = check_overlap(_items(), [tmp_path], "exclude", paraphrases=minilm)
    assert check.overlapping == [] and not check.kgs[0]["paraphrases_checked"]
    assert "ids/hashes only" in (check.note() or "") and "paraphrases not checked" in (
        check.note() or ""
    )
    # a later build keeps its questions: those are checked, and the report says only those
    record_provenance(tmp_path, SOURCES[:1], [], {})
    later = check_overlap(_items(), [tmp_path], "exclude", paraphrases=minilm)
    assert later.overlapping == ["e1"]
    assert "checked against the builds that kept their source questions" in (later.note() or "")


def test_blocks_of_source_questions_find_what_one_block_finds(minilm):
    questions = [q for _, q, _, _ in EVALUATED]
    sources = [p.question for p in SOURCES] * 3  # more sources than one block of 4
    whole = near_duplicates(questions, sources, minilm)
    assert near_duplicates(questions, sources, minilm, block=4) == whole
    assert {i for i, *_ in whole} == {0, 1, 2, 3, 6}  # questions alone: e4 reads like k4
    answers = [a for _, _, a, _ in EVALUATED]
    source_answers = [p.answer for p in SOURCES] * 3
    paired = near_duplicates(questions, sources, minilm, answers=answers,
                             source_answers=source_answers, block=4)  # fmt: skip
    assert {i for i, *_ in paired} == {0, 1, 2, 6}  # e4's answer differs: not a repeat
