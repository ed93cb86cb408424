"""Dataset loaders for BioASQ, MASH-QA and BioCDQA, on small files written in tmp_path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biorag.corpus.datasets import load_dataset
from biorag.errors import ConfigError, InputFormatError

URL = "http://www.ncbi.nlm.nih.gov/pubmed/"


def _q(qid: str, qtype: str, exact: object = None, **kw: object) -> dict:
    q = {
        "id": qid,
        "type": qtype,
        "body": f"Question {qid}?",
        "documents": [URL + "111", URL + "222", URL + "111"],
        "snippets": [
            {"document": URL + "111", "text": "Snippet one."},
            {"document": URL + "222", "text": "Snippet two."},
            {"document": URL + "222", "text": "Snippet one."},
        ],
        "ideal_answer": [f"Ideal answer {qid}.", "Second ideal."],
    }
    if exact is not None:
        q["exact_answer"] = exact
    return q | kw


def _bioasq(folder: Path, name: str, questions: list) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(json.dumps({"questions": questions}, indent=1), encoding="utf-8")
    return path


def test_bioasq_types_gold_and_evidence(tmp_path: Path) -> None:
    qs = [
        _q("y1", "yesno", "Yes"),
        _q("f1", "factoid", [["BRCA1", "breast cancer 1"], ["BRCA2"]]),
        _q("f2", "factoid", ["TP53", "p53"]),
        _q("l1", "list", [["Srrm4"], ["Nova1", "NOVA1"]]),
        _q("l2", "list", ["a", "b"]),
        _q("s1", "summary", _body="draft body", _type="yesno"),
        _q("y2", "yesno", "no"),
    ]
    path = _bioasq(tmp_path, "11B1_golden.json", qs)
    res = load_dataset("bioasq", path)
    items = {it.id: it for it in res.items}
    assert list(items) == ["y1", "f1", "f2", "l1", "l2", "s1", "y2"]
    y1 = items["y1"]
    assert (y1.options, y1.gold, y1.question_type) == ({"A": "yes", "B": "no"}, "A", "yesno")
    assert y1.meta["exact_answer"] == "Yes" and items["y2"].gold == "B"
    assert items["f1"].gold == [["BRCA1", "breast cancer 1"], ["BRCA2"]]
    assert items["f2"].gold == [["TP53", "p53"]]  # flat factoid: one answer's synonyms
    assert items["l1"].gold == [["Srrm4"], ["Nova1", "NOVA1"]]
    assert items["l2"].gold == [["a"], ["b"]]  # flat list: one answer per entry
    s1 = items["s1"]
    assert (s1.gold, s1.question_type, s1.question) == (
        "Ideal answer s1.",
        "summary",
        "Question s1?",
    )
    assert s1.meta["ideal_answer"] == ["Ideal answer s1.", "Second ideal."]
    assert y1.gold_docs == ["111", "222"]
    assert y1.gold_snippets == ["Snippet one.", "Snippet two."]
    assert y1.context == [] and (y1.subset, y1.meta["batch"]) == ("11b", "11B1")
    assert res.info["by_type"] == {"yesno": 2, "factoid": 2, "list": 2, "summary": 1}
    oracle = load_dataset("bioasq", path, setting="snippets")
    assert oracle.items[0].context == ["Snippet one.", "Snippet two."]
    two = load_dataset("bioasq", path, split="factoid,list")
    assert [it.id for it in two.items] == ["f1", "f2", "l1", "l2"]
    with pytest.raises(ConfigError, match="question types"):
        load_dataset("bioasq", path, split="test")


def test_bioasq_folder_order_list_and_duplicates(tmp_path: Path) -> None:
    _bioasq(tmp_path / "Task10B", "10B1_golden.json", [_q("a", "yesno", "yes")])
    _bioasq(tmp_path / "Task7B", "7B1_golden.json", [_q("b", "yesno", "no")])
    res = load_dataset("bioasq", tmp_path)
    assert [it.id for it in res.items] == ["b", "a"]  # Task7B before Task10B
    assert res.info["by_subset"] == {"7b": 1, "10b": 1}
    dup = _bioasq(tmp_path / "extra", "7B2_golden.json", [_q("b", "yesno", "yes")])
    listed = load_dataset("bioasq", [tmp_path / "Task7B" / "7B1_golden.json", dup])
    assert [it.id for it in listed.items] == ["b"]
    assert "duplicate id 'b'" in listed.skipped[0].reason
    assert listed.skipped[0].file.endswith("7B2_golden.json")
    folder = load_dataset("bioasq", tmp_path / "Task7B")
    assert folder.items[0].subset == "7b"


def test_bioasq_natural_order(tmp_path: Path) -> None:
    _bioasq(tmp_path, "10B1_golden.json", [_q("ten", "yesno", "yes")])
    _bioasq(tmp_path, "7B1_golden.json", [_q("seven", "yesno", "no")])
    assert [it.id for it in load_dataset("bioasq", tmp_path).items] == ["seven", "ten"]


def test_bioasq_malformed_records(tmp_path: Path) -> None:
    qs = [
        _q("ok", "yesno", "yes"),
        _q("bad-yn", "yesno", "perhaps"),
        _q("bad-type", "essay"),
        _q("no-exact", "factoid"),
        "not an object",
        _q("no-ideal", "summary", ideal_answer=[]),
    ]
    path = _bioasq(tmp_path, "8B1_golden.json", qs)
    res = load_dataset("bioasq", path)
    assert [it.id for it in res.items] == ["ok"]
    assert len(res.skipped) == 5
    by_reason = " | ".join(s.reason for s in res.skipped)
    for needle in ("bad-yn", "'essay'", "no-exact", "questions[4]", "no-ideal"):
        assert needle in by_reason
    assert res.skipped[0].line is not None and res.skipped[0].file == str(path)


def test_bioasq_wrong_shape(tmp_path: Path) -> None:
    csv_file = tmp_path / "anatomy_test.csv"
    csv_file.write_text("q,a,b,c,d,A\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"anatomy_test\.csv.*not valid JSON"):
        load_dataset("bioasq", csv_file)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"data": []}), encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"other\.json.*'questions' list.*Fix"):
        load_dataset("bioasq", other)
    with pytest.raises(InputFormatError, match="does not exist"):
        load_dataset("bioasq", tmp_path / "nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputFormatError, match=r"no \*\.json"):
        load_dataset("bioasq", empty)
    allbad = _bioasq(tmp_path, "9B1_golden.json", [_q("x", "essay"), _q("y", "essay")])
    with pytest.raises(InputFormatError, match="none of its 2 records"):
        load_dataset("bioasq", allbad)


def _mash(tmp_path: Path) -> Path:
    context = "Sentence zero. Sentence one is long. Sentence two."
    data = {
        "version": "v2.0",
        "data": [
            {
                "title": "Flu facts",
                "paragraphs": [
                    {
                        "context": context,
                        "sent_list": ["Sentence zero.", "Sentence one is long.", "Sentence two."],
                        "qas": [
                            {
                                "id": "q1",
                                "question": "What about one and two?",
                                "is_impossible": False,
                                "answers": [
                                    {"text": "x", "answer_start": 15, "answer_span": [2, 1]}
                                ],
                            },
                            {
                                "id": "q2",
                                "question": "Ids on the qa?",
                                "answer_sent_ids": [0],
                                "answers": [{"text": "Sentence zero.", "answer_start": 0}],
                            },
                            {"id": "q3", "question": "Unanswerable?", "is_impossible": True},
                            {
                                "id": "q4",
                                "question": "Bad ids?",
                                "answer_sent_ids": [9],
                                "answers": [{"text": "t", "answer_start": 0}],
                            },
                        ],
                    },
                    {
                        "context": context,
                        "sent_starts": [[0, 14], [15, 21], [37, 13]],
                        "qas": [
                            {
                                "id": "q5",
                                "question": "Starts?",
                                "answers": [{"text": "t", "answer_starts": [[15, 21]]}],
                            },
                            {"question": "Only text?", "answers": [{"text": "Free answer."}]},
                            {"id": "q7", "answers": [{"text": "no question"}]},
                        ],
                    },
                    {"context": "no qas here"},
                ],
            }
        ],
    }
    path = tmp_path / "test_webmd_squad_v2_full.json"
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def test_mashqa_sentences_gold_and_skips(tmp_path: Path) -> None:
    res = load_dataset("mashqa", _mash(tmp_path))
    items = {it.id: it for it in res.items}
    assert list(items) == ["q1", "q2", "q5", "data[0].paragraphs[1].qas[1]"]
    q1 = items["q1"]
    assert q1.gold == ["Sentence one is long.", "Sentence two."]
    assert q1.meta["gold_sentence_ids"] == [1, 2] and q1.gold_snippets == q1.gold
    assert q1.context == ["Sentence zero.", "Sentence one is long.", "Sentence two."]
    assert (q1.question_type, q1.meta["title"]) == ("span", "Flu facts")
    assert items["q2"].gold == ["Sentence zero."]
    assert items["q5"].gold == ["Sentence one is long."]
    assert items["q5"].context[2] == "Sentence two."
    assert items["data[0].paragraphs[1].qas[1]"].gold == ["Free answer."]
    assert res.info["unanswerable"] == 1
    reasons = [s.reason for s in res.skipped]
    assert len(reasons) == 3
    assert "qas[3]" in reasons[0] and "outside" in reasons[0] and res.skipped[0].line
    assert "question" in reasons[1] and "no 'qas' list" in reasons[2]
    assert all(
        it.context == [] for it in load_dataset("mashqa", _mash(tmp_path), setting="open").items
    )
    with pytest.raises(ConfigError, match="own file"):
        load_dataset("mashqa", _mash(tmp_path), split="test")


def test_mashqa_wrong_shape(tmp_path: Path) -> None:
    wrong = tmp_path / "bioasq.json"
    wrong.write_text(json.dumps({"questions": []}), encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"bioasq\.json.*'data' list"):
        load_dataset("mashqa", wrong)


def _cd(i: int, **kw: object) -> dict:
    rec = {"question": f"Q{i}?", "ideal_answer": f"Answer {i}.", "documents_pid": [10 + i, "77"]}
    return rec | kw


def test_biocdqa_jsonl_and_json(tmp_path: Path) -> None:
    lines = [
        json.dumps(_cd(0, type="trend")),
        json.dumps(_cd(1, id="cd-1", ideal_answer=["First.", "Second."], type="gap")),
        json.dumps({"question": "No answer?", "documents_pid": []}),
        "",
        json.dumps(_cd(3, documents_pid="5, 6", source_sentences=[{"text": "S."}, "T."])),
        json.dumps({"question": "No docs?", "ideal_answer": "x"}),
    ]
    jl = tmp_path / "biocdqa.jsonl"
    jl.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = load_dataset("biocdqa", jl)
    assert [it.id for it in res.items] == ["0000", "cd-1", "0003"]
    first = res.items[0]
    assert (first.gold, first.gold_docs, first.question_type) == (
        "Answer 0.",
        ["10", "77"],
        "summary",
    )
    assert (first.subset, first.meta["type"]) == ("trend", "trend")
    assert res.items[1].gold == "First."
    assert res.items[2].gold_docs == ["5", "6"] and res.items[2].gold_snippets == ["S.", "T."]
    assert [s.line for s in res.skipped] == [3, 6]
    assert "ideal_answer" in res.skipped[0].reason and "documents_pid" in res.skipped[1].reason
    assert [it.id for it in load_dataset("biocdqa", jl, split="gap").items] == ["cd-1"]
    with pytest.raises(ConfigError, match="split"):
        load_dataset("biocdqa", jl, split="nope")
    arr = tmp_path / "biocdqa.json"
    arr.write_text(json.dumps({"data": [_cd(0), 5, _cd(2)]}, indent=2), encoding="utf-8")
    res2 = load_dataset("biocdqa", arr, limit=1)
    assert [it.id for it in res2.items] == ["0000"] and res2.info["selected"] == 2
    assert res2.skipped[0].reason.startswith("record [1]")


def test_biocdqa_wrong_shape(tmp_path: Path) -> None:
    wrong = tmp_path / "mmlu.csv"
    wrong.write_text("q,a,b,c,d,A\nq2,a,b,c,d,B\n", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"mmlu\.csv.*BioCDQA.*none of its 2 records"):
        load_dataset("biocdqa", wrong)
    obj = tmp_path / "obj.json"
    obj.write_text(json.dumps({"questions_x": {"a": 1}}, indent=2), encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"obj\.json.*one JSON object"):
        load_dataset("biocdqa", obj)
