"""Loaders for PubMed XML and folders of text/markdown files; format auto-detection."""

# ruff: noqa: E501 - the XML fixture keeps PubMed's real line layout

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from biorag.corpus.loaders import (
    detect_format,
    load_corpora,
    load_corpus,
    load_pubmed_xml,
    load_textdir,
)
from biorag.errors import InputFormatError

PUBMED_XML = """<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January 2025//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_250101.dtd">
<PubmedArticleSet>
  <PubmedArticle>
    <MedlineCitation Status="MEDLINE" Owner="NLM">
      <PMID Version="1">10001</PMID>
      <Article PubModel="Print">
        <Journal>
          <Title>The Journal of Testing</Title>
          <JournalIssue><PubDate><Year>2019</Year><Month>Mar</Month></PubDate></JournalIssue>
        </Journal>
        <ArticleTitle>Effect of <i>E. coli</i> on CO<sub>2</sub> output.</ArticleTitle>
        <Abstract>
          <AbstractText Label="BACKGROUND" NlmCategory="BACKGROUND">We studied <i>E. coli</i>
            growth at 37 °C.</AbstractText>
          <AbstractText Label="RESULTS" NlmCategory="RESULTS">Output rose 10<sup>3</sup>-fold
            (p &lt; 0.05).</AbstractText>
          <CopyrightInformation>© 2019 Someone.</CopyrightInformation>
        </Abstract>
      </Article>
      <MeshHeadingList>
        <MeshHeading><DescriptorName UI="D004926" MajorTopicYN="N">Escherichia coli</DescriptorName></MeshHeading>
        <MeshHeading><DescriptorName UI="D002245" MajorTopicYN="Y">Carbon Dioxide</DescriptorName></MeshHeading>
      </MeshHeadingList>
    </MedlineCitation>
  </PubmedArticle>
  <PubmedArticle>
    <MedlineCitation Status="MEDLINE" Owner="NLM">
      <PMID Version="1">10002</PMID>
      <Article PubModel="Print">
        <Journal><Title>J</Title><JournalIssue><PubDate><MedlineDate>1998 Dec-1999 Jan</MedlineDate></PubDate></JournalIssue></Journal>
        <ArticleTitle>A letter without abstract.</ArticleTitle>
      </Article>
    </MedlineCitation>
  </PubmedArticle>
  <PubmedArticle>
    <MedlineCitation Status="MEDLINE" Owner="NLM">
      <PMID Version="1">10003</PMID>
      <Article PubModel="Print">
        <Journal><Title>J2</Title><JournalIssue><PubDate><MedlineDate>1998 Dec-1999 Jan</MedlineDate></PubDate></JournalIssue></Journal>
        <ArticleTitle>Plain abstract.</ArticleTitle>
        <Abstract><AbstractText>Unstructured abstract text.</AbstractText></Abstract>
      </Article>
    </MedlineCitation>
  </PubmedArticle>
  <DeleteCitation><PMID Version="1">99999</PMID></DeleteCitation>
</PubmedArticleSet>
"""


def test_pubmed_xml_structured_abstract_markup_and_skips(tmp_path: Path) -> None:
    p = tmp_path / "pubmed25n0001.xml"
    p.write_text(PUBMED_XML, encoding="utf-8")
    assert detect_format(p) == "pubmed_xml"
    r = load_pubmed_xml(p)
    assert [d.source_id for d in r.documents] == ["10001", "10003"]
    d = r.documents[0]
    assert d.title == "Effect of E. coli on CO2 output."
    assert d.text == (
        "BACKGROUND: We studied E. coli growth at 37 °C.\nRESULTS: Output rose 103-fold (p < 0.05)."
    )
    assert d.metadata == {
        "journal": "The Journal of Testing",
        "year": 2019,
        "mesh": ["Escherichia coli", "Carbon Dioxide"],
    }
    assert d.source == "pubmed" and d.spans is None
    assert r.documents[1].text == "Unstructured abstract text."
    assert r.documents[1].metadata["year"] == 1998
    assert len(r.skipped) == 1
    skipped = r.skipped[0]
    assert skipped.reason == "no abstract" and skipped.file == str(p)
    assert skipped.line == PUBMED_XML.splitlines().index("  <PubmedArticle>", 5) + 1


def test_pubmed_xml_gzip(tmp_path: Path) -> None:
    p = tmp_path / "pubmed25n0002.xml.gz"
    with gzip.open(p, "wt", encoding="utf-8") as fh:
        fh.write(PUBMED_XML)
    r = load_corpus(p)
    assert len(r.documents) == 2 and len(r.skipped) == 1


def test_pubmed_xml_truncated_keeps_what_was_read(tmp_path: Path) -> None:
    p = tmp_path / "cut.xml"
    p.write_text(PUBMED_XML[: PUBMED_XML.index('<PMID Version="1">10003')], encoding="utf-8")
    r = load_pubmed_xml(p)
    assert [d.source_id for d in r.documents] == ["10001"]
    assert "XML error" in r.skipped[-1].reason


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("<!DOCTYPE html><html><body><p>Hello</p></body></html>", "root element is <html>"),
        ("<html><body><p>unclosed</body></html>", "root element is <html>"),
        ('{"id": 1, "text": "json"}\n', "not well-formed"),
    ],
)
def test_html_given_as_pubmed_xml_raises(tmp_path: Path, content: str, needle: str) -> None:
    p = tmp_path / "page.html"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(InputFormatError) as err:
        load_corpus(p, fmt="pubmed_xml")
    msg = str(err.value)
    assert str(p) in msg and "PubMed XML" in msg and needle in msg and "Fix:" in msg


def test_html_auto_detect_raises(tmp_path: Path) -> None:
    p = tmp_path / "page.xml"
    p.write_text("<html><body>x</body></html>", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"page\.xml.*choose the format"):
        load_corpus(p)


def test_textdir_recursive_titles_and_skips(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / ".hidden").mkdir()
    (root / "a.md").write_text("Intro line\n\n# Real Heading\n\nBody text.", encoding="utf-8")
    (root / "sub" / "b.txt").write_text(
        "\n  First line of b  \r\nSecond line.\r\n", encoding="utf-8"
    )
    (root / "empty.txt").write_text("  \n", encoding="utf-8")
    (root / "latin.txt").write_bytes("caf\xe9".encode("latin-1"))
    (root / ".hidden" / "c.md").write_text("# hidden", encoding="utf-8")
    (root / "data.csv").write_text("x,y", encoding="utf-8")
    assert detect_format(root) == "textdir"
    r = load_corpus(root)
    docs = {d.source_id: d for d in r.documents}
    assert list(docs) == ["a.md", "sub/b.txt"]
    assert docs["a.md"].title == "Real Heading"
    assert docs["sub/b.txt"].title == "First line of b"
    assert "\r" not in docs["sub/b.txt"].text
    assert docs["a.md"].source == "notes"
    assert sorted(s.reason.split(" ")[0] for s in r.skipped) == ["empty", "not"]
    assert len(r.files) == 4
    single = load_textdir(root / "a.md")
    assert [d.source_id for d in single.documents] == ["a.md"]


def test_textdir_errors(tmp_path: Path) -> None:
    (tmp_path / "x.csv").write_text("a,b", encoding="utf-8")
    with pytest.raises(InputFormatError, match=r"no \.txt/\.md files"):
        load_textdir(tmp_path)
    with pytest.raises(InputFormatError, match="does not exist"):
        load_textdir(tmp_path / "missing")


def test_folder_of_data_files_is_detected_per_file(tmp_path: Path) -> None:
    (tmp_path / "readme.txt").write_text("About this folder.", encoding="utf-8")
    (tmp_path / "a.xml").write_text(PUBMED_XML, encoding="utf-8")
    (tmp_path / "b.jsonl").write_text('{"id": "j", "text": "Json doc."}\n', encoding="utf-8")
    r = load_corpus(tmp_path)
    assert sorted(d.source_id for d in r.documents) == ["10001", "10003", "j"]
    assert len(r.files) == 2
    as_text = load_corpus(tmp_path, fmt="textdir")
    assert [d.source_id for d in as_text.documents] == ["readme.txt"]
    only_xml = load_corpora([tmp_path], fmt="pubmed_xml")
    assert len(only_xml.documents) == 2
