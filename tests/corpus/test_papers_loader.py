"""The paper-collection loader: abstracts and full texts of one papers JSONL file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from biorag.corpus.loaders import (
    FORMATS,
    detect_format,
    load_corpora,
    load_corpus,
    load_paper_abstracts,
    load_paper_fulltexts,
    normalize_format,
)
from biorag.corpus.loaders.papers import PaperLoadReport, load_papers_as
from biorag.errors import InputFormatError

LINES = [
    # 1: everything, pid wins over id
    json.dumps(
        {
            "pid": "P1",
            "id": "ignored",
            "title": " KRX1 in fibrosis ",
            "abstract": "KRX1 drives liver fibrosis.",
            "full_text": "# Intro\nKRX1 is an enzyme.\n\n# Results\nKRX1 drives fibrosis.",
            "year": 2021,
            "keywords": ["KRX1", "fibrosis"],
            "citations": ["P2"],
            "journal": "Hepatology",
        }
    ),
    # 2: integer id, the "fulltext" alias, keywords as one string
    json.dumps(
        {
            "id": 2,
            "title": "Statins",
            "abstract": "Statins lower LDL.",
            "fulltext": "# Methods\nA trial.",
            "keywords": "statin; LDL",
        }
    ),
    # 3: "body" alias; 4: "markdown" alias
    json.dumps({"pid": "P3", "abstract": "Vitamin D.", "body": "Body text."}),
    json.dumps({"pid": "P4", "abstract": "Calcium.", "markdown": "## Calcium\nMarkdown text."}),
    # 5: no full text; 6: a blank one (neither is an error)
    json.dumps({"pid": "P5", "title": "Abstract only", "abstract": "Only an abstract."}),
    json.dumps({"pid": "P6", "abstract": "Blank full text.", "full_text": "   "}),
    # 7: invalid JSON; 8: no pid; 9: a list as pid; 10: a numeric title
    '{"pid": "P7", "abstract": "no closing brace"',
    json.dumps({"title": "No id", "abstract": "x", "full_text": "y"}),
    json.dumps({"pid": ["P9"], "abstract": "x", "full_text": "y"}),
    json.dumps({"pid": "P10", "title": 10, "abstract": "x", "full_text": "y"}),
    # 11: no abstract, a full text; 12: an abstract, a non-string full text
    json.dumps({"pid": "P11", "full_text": "Full text without an abstract."}),
    json.dumps({"pid": "P12", "abstract": "Abstract.", "full_text": {"sections": []}}),
    # 13: a null full_text falls through to the next alias
    json.dumps({"pid": "P13", "abstract": "Null first.", "full_text": None, "body": "Second."}),
]


@pytest.fixture
def papers(tmp_path: Path) -> Path:
    path = tmp_path / "papers.jsonl"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def test_abstracts(papers: Path) -> None:
    r = load_paper_abstracts(papers)
    assert isinstance(r, PaperLoadReport)
    assert [d.source_id for d in r.documents] == ["P1", "2", "P3", "P4", "P5", "P6", "P12", "P13"]
    d1 = r.documents[0]
    assert d1.title == "KRX1 in fibrosis" and d1.text == "KRX1 drives liver fibrosis."
    assert d1.metadata == {
        "part": "abstract",
        "year": 2021,
        "keywords": ["KRX1", "fibrosis"],
        "journal": "Hepatology",
    }
    assert r.documents[1].metadata["keywords"] == ["statin", "LDL"]
    assert all(d.source == "papers" for d in r.documents)
    assert [(s.file, s.line) for s in r.skipped] == [(str(papers), n) for n in (7, 8, 9, 10, 11)]
    reasons = [s.reason for s in r.skipped]
    assert "invalid JSON" in reasons[0] and "missing 'pid' (or 'id')" in reasons[1]
    assert "'pid' is list" in reasons[2] and "'title' is int" in reasons[3]
    assert "missing 'abstract'" in reasons[4]
    assert r.without_fulltext == []  # not this format's concern


def test_fulltexts(papers: Path) -> None:
    r = load_paper_fulltexts(papers)
    by = {d.source_id: d for d in r.documents}
    assert list(by) == ["P1", "2", "P3", "P4", "P11", "P13"]
    assert by["P1"].text.startswith("# Intro") and by["P1"].title == "KRX1 in fibrosis"
    assert by["2"].text == "# Methods\nA trial." and by["P3"].text == "Body text."
    assert by["P4"].text.startswith("## Calcium") and by["P13"].text == "Second."
    assert all(d.metadata["part"] == "fulltext" for d in r.documents)
    assert by["P1"].metadata["year"] == 2021 and "citations" not in by["P1"].metadata
    assert r.without_fulltext == ["P5", "P6"]  # counted, not errors
    assert [s.line for s in r.skipped] == [7, 8, 9, 10, 12]
    assert "'full_text' is dict" in r.skipped[-1].reason
    summary = r.summary()
    assert summary["without_fulltext"] == 2 and summary["skipped"] == 5
    assert summary["without_fulltext_examples"] == ["P5", "P6"]


def test_one_paper_two_documents(papers: Path) -> None:
    abstract = load_paper_abstracts(papers).documents[0]
    full = load_paper_fulltexts(papers).documents[0]
    assert abstract.source_id == full.source_id == "P1" and abstract.id != full.id


def test_registered_formats_and_folders(papers: Path, tmp_path: Path) -> None:
    assert {"paper_abstracts", "paper_fulltexts"} <= set(FORMATS)
    assert normalize_format("paper-abstracts") == "paper_abstracts"
    r = load_corpus(papers, "paper-fulltexts", source="mine")
    assert isinstance(r, PaperLoadReport) and r.without_fulltext == ["P5", "P6"]
    assert {d.source for d in r.documents} == {"mine"}
    # A folder of papers files: each file read, the full-text counts kept across files.
    folder = tmp_path / "many"
    folder.mkdir()
    (folder / "a.jsonl").write_text(LINES[0] + "\n" + LINES[4] + "\n")
    with gzip.open(folder / "b.jsonl.gz", "wt", encoding="utf-8") as fh:
        fh.write(LINES[5] + "\n" + LINES[2] + "\n")
    r2 = load_corpora([folder], "paper_fulltexts")
    assert [d.source_id for d in r2.documents] == ["P1", "P3"]
    assert r2.without_fulltext == ["P5", "P6"] and len(r2.files) == 2
    assert len(load_corpora([folder], "paper_abstracts").documents) == 4
    with pytest.raises(ValueError):
        load_papers_as(papers, "intro")  # type: ignore[arg-type]


def test_auto_refuses_papers_with_a_hint(papers: Path, tmp_path: Path) -> None:
    with pytest.raises(InputFormatError) as e:
        detect_format(papers)
    assert "papers.jsonl" in str(e.value) and "paper-abstracts" in str(e.value)
    assert "paper-fulltexts" in str(e.value)
    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"id": "a", "abstract": "x", "text": "y"}) + "\n")
    assert detect_format(plain) == "jsonl"  # a 'text' field keeps the generic format


def test_not_json_lines_at_all(tmp_path: Path) -> None:
    p = tmp_path / "arr.jsonl"
    p.write_text('[{"pid": "P1", "abstract": "x"}]\n')
    with pytest.raises(InputFormatError, match="JSON array"):
        load_paper_abstracts(p)
    with pytest.raises(InputFormatError, match="does not exist"):
        load_paper_fulltexts(tmp_path / "missing.jsonl")
