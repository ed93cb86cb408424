"""JSON Lines loader: one object a line with ``id``, optional ``title``, ``text`` or ``contents``.

Gzip files (``.jsonl.gz``) are read transparently. ``text`` wins over ``contents`` when both are
present; other scalar or list fields go into ``metadata``. A line without ``id`` gets the id
``<file name>:<line>``. Bad lines (invalid JSON, not an object, missing or non-string text, a
non-string title) are skipped and reported with their line number.
"""

from __future__ import annotations

from pathlib import Path

from biorag.corpus.loaders._common import iter_json_lines, stem, text_field
from biorag.corpus.models import Document, LoadReport, SkippedRecord

__all__ = ["load_jsonl"]

EXPECTED = "JSON Lines (one JSON object per line with 'id' and 'text' or 'contents')"
_RESERVED = frozenset({"id", "_id", "title", "text", "contents"})


def load_jsonl(path: str | Path, source: str | None = None) -> LoadReport:
    """Load a JSONL corpus file; ``source`` defaults to the file name without extensions."""
    p = Path(path)
    report = LoadReport(files=[str(p)])
    src = source or stem(p)
    for lineno, obj in iter_json_lines(p, report, EXPECTED):
        text, why = text_field(obj, "text", "contents")
        if text is None:
            report.skipped.append(SkippedRecord(str(p), lineno, why or "no text"))
            continue
        title = obj.get("title") or ""
        if not isinstance(title, str):
            reason = f"field 'title' is {type(title).__name__}, expected a string"
            report.skipped.append(SkippedRecord(str(p), lineno, reason))
            continue
        rid = obj.get("id", obj.get("_id"))
        if isinstance(rid, bool) or not isinstance(rid, str | int) or rid == "":
            if rid is not None:
                reason = f"field 'id' is {type(rid).__name__}, expected a string or integer"
                report.skipped.append(SkippedRecord(str(p), lineno, reason))
                continue
            rid = f"{p.name}:{lineno}"
        metadata = {
            k: v
            for k, v in obj.items()
            if k not in _RESERVED
            and isinstance(v, str | int | float | bool | list)
            and v is not None
        }
        report.documents.append(
            Document.create(
                source_id=str(rid), title=title.strip(), text=text, source=src, metadata=metadata
            )
        )
    return report
