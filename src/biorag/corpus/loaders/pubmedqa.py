"""PubMedQA loader (``{pmid: {QUESTION, CONTEXTS, LABELS, MESHES, YEAR, LONG_ANSWER, ...}}``).

One Document per PMID: ``text`` is the CONTEXTS joined with "\\n" (each context one span),
``source_id`` the PMID, ``title`` empty (PubMedQA has none), ``metadata`` = ``meshes``, ``labels``
(the section label of each context) and ``year``. The question, LONG_ANSWER (the abstract's
conclusion, i.e. the answer) and final_decision are never copied into the Document.
"""

from __future__ import annotations

from pathlib import Path

from biorag.corpus.loaders._common import format_error, line_of_key, read_json
from biorag.corpus.models import Document, LoadReport, SkippedRecord

__all__ = ["load_pubmedqa"]

EXPECTED = "PubMedQA JSON ({PMID: {QUESTION, CONTEXTS, LABELS, ...}})"


def _str_list(value: object) -> list[str] | None:
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def load_pubmedqa(path: str | Path, source: str | None = None) -> LoadReport:
    """Load a PubMedQA file (e.g. ``ori_pqal.json``); ``source`` defaults to ``pubmedqa``."""
    p = Path(path)
    data, raw = read_json(p, EXPECTED)
    if not isinstance(data, dict) or not any(
        isinstance(v, dict) and "CONTEXTS" in v for v in data.values()
    ):
        found = "it is a JSON " + type(data).__name__ + " without records holding CONTEXTS"
        raise format_error(p, EXPECTED, found, "choose its own format (e.g. bioasq, jsonl)")
    src = source or "pubmedqa"
    report = LoadReport(files=[str(p)])
    for pmid, rec in data.items():
        contexts = _str_list(rec.get("CONTEXTS")) if isinstance(rec, dict) else None
        if not contexts:
            reason = (
                "not an object" if not isinstance(rec, dict) else "CONTEXTS missing or not strings"
            )
            report.skipped.append(
                SkippedRecord(str(p), line_of_key(raw, str(pmid)), f"PMID {pmid}: {reason}")
            )
            continue
        parts = [c.strip() for c in contexts if c.strip()]
        if not parts:
            report.skipped.append(
                SkippedRecord(str(p), line_of_key(raw, str(pmid)), f"PMID {pmid}: empty CONTEXTS")
            )
            continue
        labels = _str_list(rec.get("LABELS")) or []
        spans: list[tuple[int, int]] = []
        pos = 0
        for part in parts:
            spans.append((pos, pos + len(part)))
            pos += len(part) + 1
        metadata = {
            "meshes": _str_list(rec.get("MESHES")) or [],
            "labels": labels if len(labels) == len(parts) else [],
            "year": rec.get("YEAR"),
        }
        report.documents.append(
            Document.create(
                source_id=str(pmid),
                title="",
                text="\n".join(parts),
                source=src,
                metadata=metadata,
                spans=spans,
            )
        )
    return report
