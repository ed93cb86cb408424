"""BioASQ Task B loader: the gold snippets of one or many files become a pooled corpus.

Input: ``{"questions": [{id, body, type, documents: [urls], snippets: [{document: url, text,
offsetInBeginSection, beginSection, ...}], ...}]}``. Each snippet's PMID is the last path
segment of its ``document`` URL. Snippet texts are de-duplicated across all questions and all
files given together, keeping the first occurrence: ``dedupe="exact"`` (default) compares the
texts exactly, ``"normalized"`` after collapsing whitespace (the pooled 7b-11b gold sets give
21,231 exact-distinct snippets in 13,437 documents; 20,554 whitespace-normalized-distinct). A
text shared by two PMIDs stays with the first. One Document per PMID, in first-seen order:
``text`` = its distinct snippets (stripped) joined with "\\n", ``spans`` = one per snippet,
``title`` empty, ``metadata`` = ``url``, ``sections`` (each snippet's ``beginSection``) and
``offsets`` (each snippet's ``[begin, end)`` in that section of the article, from
``offsetInBeginSection``; None when the file gives none or the snippet spans two sections), so
the BioASQ snippet measures can map a chunk back to the article.
Questions and answers are never copied.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Literal

from biorag.corpus.loaders._common import PathLike, as_paths, format_error, line_of, read_json
from biorag.corpus.models import Document, LoadReport, SkippedRecord

__all__ = ["load_bioasq"]

EXPECTED = 'BioASQ Task B JSON ({"questions": [{id, body, snippets: [...]}]})'
_WS_RE = re.compile(r"\s+")


def _qline(raw: str, qid: object) -> int | None:
    """The line where question ``qid`` is, for skipped-record reports (searched only on error)."""
    return line_of(raw, f'"{qid}"') if isinstance(qid, str) else None


def snippet_offsets(snippet: dict, text: str) -> list[int] | None:
    """The stripped text's ``[begin, end)`` in its section, or None without usable offsets."""
    begin = snippet.get("offsetInBeginSection")
    one_section = snippet.get("beginSection") == snippet.get("endSection")
    if isinstance(begin, bool) or not isinstance(begin, int) or begin < 0 or not one_section:
        return None
    begin += len(text) - len(text.lstrip())
    return [begin, begin + len(text.strip())]


class _Doc:
    __slots__ = ("offsets", "sections", "texts", "url")

    def __init__(self, url: str) -> None:
        self.url = url
        self.texts: list[str] = []
        self.sections: list[str] = []
        self.offsets: list[list[int] | None] = []


def load_bioasq(
    paths: PathLike | Iterable[PathLike],
    source: str | None = None,
    dedupe: Literal["exact", "normalized"] = "exact",
) -> LoadReport:
    """Load and pool BioASQ Task B files; ``source`` defaults to ``bioasq``."""
    files = as_paths(paths)
    report = LoadReport(files=[str(p) for p in files])
    docs: dict[str, _Doc] = {}
    seen: set[str] = set()
    for p in files:
        data, raw = read_json(p, EXPECTED)
        questions = data.get("questions") if isinstance(data, dict) else None
        if not isinstance(questions, list):
            found = "it has no top-level 'questions' list"
            raise format_error(p, EXPECTED, found, "choose its own format (e.g. pubmedqa)")
        for qi, q in enumerate(questions):
            qid = q.get("id") if isinstance(q, dict) else None
            snippets = q.get("snippets", []) if isinstance(q, dict) else None
            if not isinstance(snippets, list):
                report.skipped.append(
                    SkippedRecord(
                        str(p), _qline(raw, qid), f"question {qid or qi}: 'snippets' is not a list"
                    )
                )
                continue
            for si, sn in enumerate(snippets):
                text = sn.get("text") if isinstance(sn, dict) else None
                url = sn.get("document") if isinstance(sn, dict) else None
                if not isinstance(text, str) or not text.strip() or not isinstance(url, str):
                    reason = f"question {qid or qi}, snippet {si}: missing or invalid text/document"
                    report.skipped.append(SkippedRecord(str(p), _qline(raw, qid), reason))
                    continue
                pmid = url.rstrip("/").rsplit("/", 1)[-1].strip()
                if not pmid:
                    reason = f"question {qid or qi}, snippet {si}: no PMID in {url!r}"
                    report.skipped.append(SkippedRecord(str(p), _qline(raw, qid), reason))
                    continue
                key = text if dedupe == "exact" else _WS_RE.sub(" ", text).strip()
                if key in seen:
                    continue
                seen.add(key)
                doc = docs.get(pmid)
                if doc is None:
                    doc = docs[pmid] = _Doc(url)
                doc.texts.append(text.strip())
                doc.sections.append(str(sn.get("beginSection") or ""))
                doc.offsets.append(snippet_offsets(sn, text))
    src = source or "bioasq"
    for pmid, d in docs.items():
        spans: list[tuple[int, int]] = []
        pos = 0
        for t in d.texts:
            spans.append((pos, pos + len(t)))
            pos += len(t) + 1
        report.documents.append(
            Document.create(
                source_id=pmid,
                text="\n".join(d.texts),
                source=src,
                metadata={"url": d.url, "sections": d.sections, "offsets": d.offsets},
                spans=spans,
            )
        )
    return report
