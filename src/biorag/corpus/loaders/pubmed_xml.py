"""PubMed/MEDLINE XML loader (the annual baseline and update-file format), gzip-aware.

Streams ``PubmedArticleSet/PubmedArticle`` with ``lxml.etree.iterparse`` and clears each element
after use, so a 30k-article baseline file runs in constant memory. One Document per article:
``source_id`` = PMID, ``title`` = ArticleTitle, ``text`` = the AbstractText sections joined with
"\\n", each prefixed with its ``Label`` ("BACKGROUND: ...") when structured; inline markup
(``<i>``, ``<sup>``, ``<b>`` ...) is flattened with ``itertext``. ``metadata``: ``journal``,
``year``, ``mesh`` (descriptor names). Articles without an abstract are skipped with reason
"no abstract"; book records are skipped; ``DeleteCitation`` entries are ignored.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from lxml import etree

from biorag.corpus.loaders._common import GZIP_ERRORS, format_error, open_binary, require_file
from biorag.corpus.models import Document, LoadReport, SkippedRecord

__all__ = ["load_pubmed_xml"]

EXPECTED = "PubMed XML (a <PubmedArticleSet> of <PubmedArticle> records)"
_ROOTS = ("PubmedArticleSet", "PubmedBookArticleSet")
_TAGS = ("PubmedArticle", "PubmedBookArticle", "DeleteCitation")
_WS_RE = re.compile(r"\s+")
_YEAR_RE = re.compile(r"\b(1[89]\d\d|20\d\d)\b")


def _text(el: Any) -> str:
    return _WS_RE.sub(" ", "".join(el.itertext())).strip() if el is not None else ""


def _year(article: Any, citation: Any) -> int | None:
    for path in (
        "Journal/JournalIssue/PubDate/Year",
        "Journal/JournalIssue/PubDate/MedlineDate",
        "ArticleDate/Year",
    ):
        m = _YEAR_RE.search(_text(article.find(path)))
        if m:
            return int(m.group(1))
    m = _YEAR_RE.search(_text(citation.find("DateCompleted/Year")))
    return int(m.group(1)) if m else None


def _article_document(elem: Any, source: str) -> Document | str:
    """A Document for one ``PubmedArticle``, or the reason it was skipped."""
    citation = elem.find("MedlineCitation")
    if citation is None:
        return "no MedlineCitation"
    pmid = _text(citation.find("PMID"))
    article = citation.find("Article")
    if not pmid or article is None:
        return "no PMID or Article"
    parts = []
    for ab in article.iterfind("Abstract/AbstractText"):
        body = _text(ab)
        if not body:
            continue
        label = (ab.get("Label") or "").strip()
        parts.append(f"{label}: {body}" if label else body)
    if not parts:
        return "no abstract"
    journal = _text(article.find("Journal/Title")) or _text(
        citation.find("MedlineJournalInfo/MedlineTA")
    )
    mesh = [
        _text(d)
        for d in citation.iterfind("MeshHeadingList/MeshHeading/DescriptorName")
        if _text(d)
    ]
    return Document.create(
        source_id=pmid,
        title=_text(article.find("ArticleTitle")),
        text="\n".join(parts),
        source=source,
        metadata={"journal": journal, "year": _year(article, citation), "mesh": mesh},
    )


def _check_root(p: Path) -> None:
    """Raise :class:`InputFormatError` unless the document element is a PubMed article set."""
    try:
        with open_binary(p) as fh:
            for _, el in etree.iterparse(
                fh,
                events=("start",),
                load_dtd=False,
                no_network=True,
                resolve_entities=False,
                recover=False,
            ):
                root = etree.QName(el).localname
                break
            else:
                root = None
    except etree.XMLSyntaxError as e:
        fix = "read it as format jsonl or textdir if it is not PubMed XML, or re-download it"
        raise format_error(p, EXPECTED, f"it is not well-formed XML ({e})", fix) from e
    except GZIP_ERRORS as e:
        raise format_error(p, EXPECTED, f"gzip decompression failed ({e})", "re-download it") from e
    if root not in _ROOTS:
        found = f"its root element is <{root}>" if root else "it has no XML element"
        fix = "give a PubMed/MEDLINE XML file (e.g. pubmed25n0001.xml.gz) or choose its own format"
        raise format_error(p, EXPECTED, found, fix)


def load_pubmed_xml(path: str | Path, source: str | None = None) -> LoadReport:
    """Load one PubMed XML file (``.xml`` or ``.xml.gz``); ``source`` defaults to ``pubmed``."""
    p = Path(path)
    require_file(p, EXPECTED)
    _check_root(p)
    src = source or "pubmed"
    report = LoadReport(files=[str(p)])
    fname = str(p)
    last_line = 1
    try:
        with open_binary(p) as fh:
            context = etree.iterparse(
                fh,
                events=("end",),
                tag=_TAGS,
                load_dtd=False,
                no_network=True,
                resolve_entities=False,
                huge_tree=True,
            )
            for _, elem in context:
                last_line = elem.sourceline or last_line
                tag = elem.tag
                if tag == "PubmedArticle":
                    result = _article_document(elem, src)
                    if isinstance(result, Document):
                        report.documents.append(result)
                    else:
                        report.skipped.append(SkippedRecord(fname, elem.sourceline, result))
                elif tag == "PubmedBookArticle":
                    report.skipped.append(
                        SkippedRecord(fname, elem.sourceline, "book record (not supported)")
                    )
                elem.clear(keep_tail=True)
                parent = elem.getparent()
                if parent is not None:
                    while elem.getprevious() is not None:
                        del parent[0]
    except etree.XMLSyntaxError as e:
        line = getattr(e, "lineno", None) or last_line
        report.skipped.append(SkippedRecord(fname, line, f"XML error, rest of file not read: {e}"))
    except GZIP_ERRORS as e:
        report.skipped.append(
            SkippedRecord(fname, last_line, f"file truncated or corrupt ({e}); rest not read")
        )
    return report
