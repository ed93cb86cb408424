"""Loaders for JSON-based formats: jsonl, medrag, pubmedqa, bioasq; malformed input handling."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from biorag.corpus.loaders import (
    detect_format,
    load_bioasq,
    load_corpora,
    load_corpus,
    load_jsonl,
    load_medrag,
    load_pubmedqa,
)
from biorag.errors import InputFormatError


def _write_lines(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _check_spans(doc) -> None:
    for s, e in doc.spans:
        assert 0 <= s < e <= len(doc.text)


# --- jsonl -------------------------------------------------------------------------------------


def test_jsonl_loads_and_reports_bad_line_in_the_middle(tmp_path: Path) -> None:
    p = _write_lines(
        tmp_path / "c.jsonl",
        [
            json.dumps({"id": "a", "title": "A", "text": "Alpha text.", "year": 2020}),
            json.dumps({"id": 2, "contents": "Beta text."}),
            '{"id": "broken", "text": "no closing brace"',
            "",
            json.dumps({"id": "c", "title": 5, "text": "bad title"}),
            json.dumps({"id": "d"}),
            json.dumps(["not", "an", "object"]),
            json.dumps({"id": "e", "text": "Epsilon."}),
        ],
    )
    r = load_jsonl(p)
    assert [d.source_id for d in r.documents] == ["a", "2", "e"]
    assert r.documents[0].title == "A" and r.documents[0].metadata == {"year": 2020}
    assert r.documents[0].source == "c"
    assert r.documents[1].text == "Beta text."
    assert [(s.line, s.file) for s in r.skipped] == [
        (3, str(p)),
        (5, str(p)),
        (6, str(p)),
        (7, str(p)),
    ]
    assert "invalid JSON" in r.skipped[0].reason and "title" in r.skipped[1].reason
    assert r.files == [str(p)]
    assert r.summary()["skipped"] == 4


def test_jsonl_gzip_and_auto_detection(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write(json.dumps({"id": "g1", "text": "Gzipped text."}) + "\n")
    assert detect_format(p) == "jsonl"
    r = load_corpus(p)
    assert [d.text for d in r.documents] == ["Gzipped text."]
    assert r.documents[0].source == "c"


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ('[{"id": "a", "text": "x"}]', "JSON array"),
        ("<html><body>hi</body></html>", "markup"),
        ("not json at all\nstill not", "no line is a JSON object"),
    ],
)
def test_jsonl_wrong_format_raises_naming_file(tmp_path: Path, content: str, needle: str) -> None:
    p = tmp_path / "wrong.jsonl"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(InputFormatError) as err:
        load_jsonl(p)
    msg = str(err.value)
    assert str(p) in msg and needle in msg and "JSON Lines" in msg and "Fix:" in msg


def test_missing_path_raises(tmp_path: Path) -> None:
    missing = tmp_path / "nope.jsonl"
    for call in (lambda: load_corpus(missing), lambda: load_jsonl(missing)):
        with pytest.raises(InputFormatError, match=r"nope\.jsonl.*does not exist"):
            call()
    with pytest.raises(InputFormatError, match="unknown corpus format"):
        load_corpus(missing, fmt="csv")


# --- medrag ------------------------------------------------------------------------------------


def _medrag(rid: str, title: str, content: str, **extra) -> str:
    rec = {"id": rid, "title": title, "content": content, "contents": f"{title}. {content}"}
    return json.dumps({**rec, **extra})


def test_medrag_groups_consecutive_snippets(tmp_path: Path) -> None:
    (tmp_path / "textbooks" / "chunk").mkdir(parents=True)
    p = _write_lines(
        tmp_path / "textbooks" / "chunk" / "Anatomy_Gray.jsonl",
        [
            _medrag("Anatomy_Gray_0", "Anatomy_Gray", "What is anatomy?"),
            _medrag("Anatomy_Gray_1", "Anatomy_Gray", "Anatomy includes structures."),
            _medrag("article-17_0", "Asthma -- Introduction", "Asthma is common."),
            _medrag("article-17_1", "Asthma -- Etiology", "Triggers vary."),
            _medrag("article-18_0", "Gout -- Introduction", "Gout is urate."),
            _medrag("pubmed23n0001_0", "Title one", "Abstract one.", PMID="111"),
            _medrag("pubmed23n0001_1", "Title two", "Abstract two.", PMID="222"),
            _medrag("loose-id", "Lone", "Single snippet."),
        ],
    )
    assert detect_format(p) == "medrag"
    r = load_medrag(p)
    docs = {d.source_id: d for d in r.documents}
    assert list(docs) == ["Anatomy_Gray", "article-17", "article-18", "111", "222", "loose-id"]
    book = docs["Anatomy_Gray"]
    assert book.text == "What is anatomy?\nAnatomy includes structures."
    assert [book.text[s:e] for s, e in book.spans] == [
        "What is anatomy?",
        "Anatomy includes structures.",
    ]
    assert book.metadata["snippet_ids"] == ["Anatomy_Gray_0", "Anatomy_Gray_1"]
    assert book.source == "textbooks"
    assert docs["article-17"].title == "Asthma" and len(docs["article-17"].spans) == 2
    assert docs["111"].title == "Title one" and docs["111"].metadata["pmid"] == "111"
    for d in r.documents:
        _check_spans(d)


def test_medrag_non_consecutive_indices_start_new_doc(tmp_path: Path) -> None:
    p = _write_lines(
        tmp_path / "w.jsonl",
        [_medrag("wiki_0", "T", "a"), _medrag("wiki_5", "T", "b"), '{"id": "wiki_6"}'],
    )
    r = load_medrag(p)
    assert [d.text for d in r.documents] == ["a", "b"]
    assert r.skipped[0].line == 3


# --- pubmedqa ----------------------------------------------------------------------------------

LONG_ANSWER = "Mitochondria clearly play a role in remodelling; this is the answer."


def _pubmedqa(tmp_path: Path) -> Path:
    data = {
        "21645374": {
            "QUESTION": "Do mitochondria play a role?",
            "CONTEXTS": ["Background context one.", "Results context two."],
            "LABELS": ["BACKGROUND", "RESULTS"],
            "MESHES": ["Mitochondria"],
            "YEAR": "2011",
            "LONG_ANSWER": LONG_ANSWER,
            "final_decision": "yes",
        },
        "999": {"QUESTION": "Broken?", "CONTEXTS": "not a list", "LONG_ANSWER": "x"},
    }
    p = tmp_path / "ori_pqal.json"
    p.write_text(json.dumps(data, indent=4), encoding="utf-8")
    return p


def test_pubmedqa_one_doc_per_pmid_without_long_answer(tmp_path: Path) -> None:
    p = _pubmedqa(tmp_path)
    assert detect_format(p) == "pubmedqa"
    r = load_corpus(p)
    assert len(r.documents) == 1
    d = r.documents[0]
    assert d.source_id == "21645374" and d.title == "" and d.source == "pubmedqa"
    assert [d.text[s:e] for s, e in d.spans] == ["Background context one.", "Results context two."]
    assert d.metadata["labels"] == ["BACKGROUND", "RESULTS"]
    assert d.metadata["meshes"] == ["Mitochondria"]
    dumped = d.model_dump_json()
    assert LONG_ANSWER not in dumped and "answer" not in dumped.lower()
    assert "yes" not in json.dumps(d.metadata) and "QUESTION" not in dumped
    line = p.read_text().splitlines().index('    "999": {') + 1
    assert len(r.skipped) == 1 and r.skipped[0].line == line and "999" in r.skipped[0].reason


def test_pubmedqa_wrong_layout_raises(tmp_path: Path) -> None:
    p = tmp_path / "other.json"
    p.write_text('{"a": {"b": 1}}', encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"other\.json.*PubMedQA"):
        load_pubmedqa(p)
    with pytest.raises(InputFormatError, match=r"other\.json.*not recognized"):
        load_corpus(p)


# --- bioasq ------------------------------------------------------------------------------------


def _bioasq(path: Path, questions: list[dict]) -> Path:
    path.write_text(json.dumps({"questions": questions}, indent=2), encoding="utf-8")
    return path


def _snip(pmid: str, text: str, section: str = "abstract") -> dict:
    url = f"http://www.ncbi.nlm.nih.gov/pubmed/{pmid}"
    return {"document": url, "text": text, "beginSection": section, "offsetInBeginSection": 0}


def test_bioasq_dedupes_across_questions_and_files(tmp_path: Path) -> None:
    a = _bioasq(
        tmp_path / "7B1_golden.json",
        [
            {
                "id": "q1",
                "body": "Q1?",
                "snippets": [_snip("1", "S one."), _snip("2", "S two.", "title")],
            },
            {"id": "q2", "body": "Q2?", "snippets": [_snip("1", "S one."), _snip("1", "S three.")]},
        ],
    )
    b = _bioasq(
        tmp_path / "8B1_golden.json",
        [
            {"id": "q3", "body": "Q3?", "snippets": [_snip("2", "S two."), _snip("3", "S four.")]},
            {"id": "q4", "body": "Q4?", "snippets": [{"document": "x/4", "text": 7}]},
        ],
    )
    assert detect_format(a) == "bioasq"
    for r in (load_bioasq([a, b]), load_corpora([a, b])):
        docs = {d.source_id: d for d in r.documents}
        assert list(docs) == ["1", "2", "3"]
        assert docs["1"].text == "S one.\nS three."
        assert [docs["1"].text[s:e] for s, e in docs["1"].spans] == ["S one.", "S three."]
        assert docs["2"].metadata["sections"] == ["title"]
        assert sum(len(d.spans) for d in r.documents) == 4
        assert len(r.skipped) == 1 and r.skipped[0].file == str(b) and r.skipped[0].line is not None
        assert all("Q1?" not in d.text for d in r.documents)
    # loaded separately, files are not deduped against each other
    separate = load_corpus(a).documents + load_corpus(b).documents
    assert sum(len(d.spans) for d in separate) == 5


def test_bioasq_normalized_dedupe(tmp_path: Path) -> None:
    a = _bioasq(
        tmp_path / "a.json", [{"id": "q", "snippets": [_snip("1", "X y."), _snip("1", "X  y. ")]}]
    )
    assert len(load_bioasq(a).documents[0].spans) == 2
    assert len(load_bioasq(a, dedupe="normalized").documents[0].spans) == 1


def test_bioasq_wrong_layout_raises(tmp_path: Path) -> None:
    p = tmp_path / "q.json"
    p.write_text('{"questions": 3}', encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"q\.json.*BioASQ.*'questions'"):
        load_bioasq(p)
    bad = tmp_path / "bad.json"
    bad.write_text('{"questions": [', encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"bad\.json.*not valid JSON"):
        load_bioasq(bad)
