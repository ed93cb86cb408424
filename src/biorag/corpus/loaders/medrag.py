"""MedRAG snippet loader (``id``, ``title``, ``content``, ``contents``; optional ``PMID``).

MedRAG ships its corpora as pre-chunked snippets whose ids are ``<doc>_<i>``. Grouping rule:

* consecutive snippets are merged into one Document when they share the id prefix (the part
  before the last ``_<digits>``), their indices follow each other (``i``, ``i+1``), and their
  titles agree up to a `` -- `` section suffix (StatPearls titles are ``Article -- Section``);
  textbooks (``Anatomy_Gray_0``, title ``Anatomy_Gray``) thus become one Document per book,
  StatPearls (``article-17495_3``) one per article, Wikipedia one per article;
* a snippet is its own Document when its id has no ``_<digits>`` suffix, or it carries a ``PMID``
  (MedRAG PubMed: one abstract per snippet, ids ``pubmed23n0001_0`` whose prefix is a *file*,
  so a shared prefix alone would wrongly merge unrelated abstracts).

A merged Document's text is its snippets joined with "\\n"; ``spans`` are the snippet ranges (the
chunking stays MedRAG's), ``metadata["snippet_ids"]`` the snippet ids in order, ``source_id`` the
prefix (or the PMID / the full id for single snippets). ``content`` is the snippet text; when it is
missing, ``contents`` is used.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from biorag.corpus.loaders._common import iter_json_lines, stem, text_field
from biorag.corpus.models import Document, LoadReport, SkippedRecord

__all__ = ["load_medrag"]

EXPECTED = "MedRAG snippets (JSON Lines with 'id', 'title', 'content', 'contents')"
_ID_RE = re.compile(r"(.+)_(\d+)")


@dataclass
class _Group:
    key: tuple[str, str] | None
    source_id: str
    title: str
    last_index: int
    texts: list[str] = field(default_factory=list)
    ids: list[str] = field(default_factory=list)
    pmid: str | None = None


def _flush(group: _Group | None, report: LoadReport, source: str) -> None:
    if group is None or not group.texts:
        return
    spans: list[tuple[int, int]] = []
    pos = 0
    for t in group.texts:
        spans.append((pos, pos + len(t)))
        pos += len(t) + 1
    metadata: dict = {"snippet_ids": group.ids}
    if group.pmid:
        metadata["pmid"] = group.pmid
    report.documents.append(
        Document.create(
            source_id=group.source_id,
            title=group.title,
            text="\n".join(group.texts),
            source=source,
            metadata=metadata,
            spans=spans,
        )
    )


def _default_source(p: Path) -> str:
    """``corpus/textbooks/chunk/x.jsonl`` -> ``textbooks``; otherwise the file stem."""
    if p.parent.name == "chunk" and p.parent.parent.name:
        return p.parent.parent.name
    return stem(p)


def load_medrag(path: str | Path, source: str | None = None) -> LoadReport:
    """Load a MedRAG snippet file, grouping consecutive snippets of one source document."""
    p = Path(path)
    report = LoadReport(files=[str(p)])
    src = source or _default_source(p)
    cur: _Group | None = None
    for lineno, obj in iter_json_lines(p, report, EXPECTED):
        text, why = text_field(obj, "content", "contents")
        rid = obj.get("id")
        title = obj.get("title") or ""
        if text is None or not isinstance(rid, str | int) or not isinstance(title, str):
            reason = why or ("missing or invalid 'id'" if not isinstance(rid, str | int) else "")
            reason = reason or f"field 'title' is {type(title).__name__}, expected a string"
            report.skipped.append(SkippedRecord(str(p), lineno, reason))
            continue
        rid, text, title = str(rid), text.strip(), title.strip()
        pmid = obj.get("PMID")
        m = _ID_RE.fullmatch(rid)
        if pmid not in (None, "") or m is None:
            _flush(cur, report, src)
            cur = None
            single = _Group(None, str(pmid) if pmid not in (None, "") else rid, title, -1)
            single.texts.append(text)
            single.ids.append(rid)
            single.pmid = str(pmid) if pmid not in (None, "") else None
            _flush(single, report, src)
            continue
        prefix, index = m.group(1), int(m.group(2))
        base_title = title.split(" -- ", 1)[0].strip()
        key = (prefix, base_title)
        if cur is None or cur.key != key or index != cur.last_index + 1:
            _flush(cur, report, src)
            cur = _Group(key, prefix, base_title, index - 1)
        cur.texts.append(text)
        cur.ids.append(rid)
        cur.last_index = index
    _flush(cur, report, src)
    return report
