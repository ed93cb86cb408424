"""Paper-collection loader: one JSON object a line per paper -> abstract or full-text documents.

The records are those of the BioStrataKG paper input (``biorag strata build --papers``):
``pid`` (or ``id``), ``title``, ``abstract``, an optional Markdown full text, ``year``,
``keywords`` and ``citations``. Two formats read the same file, so the two levels of IP-RAR
can be indexed separately (``biorag index build --format paper-abstracts --out idx/abstracts``
and ``--format paper-fulltexts --out idx/fulltexts``):

* ``paper_abstracts`` (``paper-abstracts``): one Document per paper, ``text`` = the abstract,
  ``metadata["part"] = "abstract"``; a paper without an abstract is a malformed record;
* ``paper_fulltexts`` (``paper-fulltexts``): one Document per paper that has a full text,
  ``text`` = the full text (Markdown), ``metadata["part"] = "fulltext"``. The full text is the
  first of ``full_text``, ``fulltext``, ``body``, ``markdown`` that is present and not null; a
  paper whose full text is absent, null or blank is no error: its pid is listed in
  :attr:`PaperLoadReport.without_fulltext`.

In both, ``source_id`` is the pid (``pid`` wins over ``id``; a string or an integer), so the
abstract and the full text of one paper share it (their document ids differ), and ``title`` is
the paper's title. ``metadata`` keeps ``year``, ``keywords`` (a list, or one string split on
``;``) and the record's other scalar fields; ``citations`` and the text fields are not copied.
Gzip files are read transparently. Bad lines (invalid JSON, not an object, no usable pid, a
non-string title, a missing or non-string abstract for ``paper_abstracts``, a non-string full
text for ``paper_fulltexts``) are skipped and reported with their line number.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from biorag.corpus.loaders._common import iter_json_lines, stem, text_field
from biorag.corpus.models import Document, LoadReport, SkippedRecord

__all__ = [
    "FULLTEXT_FIELDS",
    "ID_FIELDS",
    "PAPER_FORMATS",
    "PaperLoadReport",
    "load_paper_abstracts",
    "load_paper_fulltexts",
    "load_papers_as",
]

Part = Literal["abstract", "fulltext"]
#: The canonical format names (``-`` spellings are accepted by ``normalize_format``).
PAPER_FORMATS: tuple[str, ...] = ("paper_abstracts", "paper_fulltexts")
#: Fields holding the paper id, in order of preference.
ID_FIELDS: tuple[str, ...] = ("pid", "id")
#: Fields holding the Markdown full text, in order of preference.
FULLTEXT_FIELDS: tuple[str, ...] = ("full_text", "fulltext", "body", "markdown")
EXPECTED = "papers as JSON Lines (one object per line with 'pid', 'title', 'abstract')"
_NOT_METADATA = frozenset(
    {*ID_FIELDS, *FULLTEXT_FIELDS, "title", "abstract", "keywords", "citations", "part"}
)


@dataclass
class PaperLoadReport(LoadReport):
    """A :class:`LoadReport` that also lists the papers without a full text (pids, in file
    order); they are not skipped records, only papers the full-text level cannot hold."""

    without_fulltext: list[str] = field(default_factory=list)

    def extend(self, other: LoadReport) -> None:
        super().extend(other)
        if isinstance(other, PaperLoadReport):
            self.without_fulltext.extend(other.without_fulltext)

    def summary(self) -> dict[str, Any]:
        return {
            **super().summary(),
            "without_fulltext": len(self.without_fulltext),
            "without_fulltext_examples": self.without_fulltext[:20],
        }


def _pid(obj: dict) -> tuple[str | None, str | None]:
    """The paper id as ``(pid, None)``, or ``(None, reason)``."""
    for name in ID_FIELDS:
        value = obj.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, str | int):
            return None, f"field {name!r} is {type(value).__name__}, expected a string or integer"
        if not str(value).strip():
            return None, f"field {name!r} is empty"
        return str(value).strip(), None
    return None, "missing 'pid' (or 'id')"


def _fulltext(obj: dict) -> tuple[str | None, str | None]:
    """The full text as ``(text, None)``; ``(None, None)`` when the paper has none (absent, null
    or blank); ``(None, reason)`` when the field is not a string."""
    for name in FULLTEXT_FIELDS:
        value = obj.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            return None, f"field {name!r} is {type(value).__name__}, expected a string"
        return (value, None) if value.strip() else (None, None)
    return None, None


def _keywords(value: Any) -> list[str] | None:
    if isinstance(value, str):
        return [k.strip() for k in value.split(";") if k.strip()]
    if isinstance(value, list):
        return [str(k).strip() for k in value if isinstance(k, str | int) and str(k).strip()]
    return None


def _metadata(obj: dict, part: Part) -> dict[str, Any]:
    meta: dict[str, Any] = {
        k: v
        for k, v in obj.items()
        if k not in _NOT_METADATA and isinstance(v, str | int | float | bool)
    }
    keywords = _keywords(obj.get("keywords"))
    if keywords is not None:
        meta["keywords"] = keywords
    meta["part"] = part
    return meta


def load_papers_as(path: str | Path, part: Part, source: str | None = None) -> PaperLoadReport:
    """Load a papers JSONL file as abstract or full-text documents (see the module doc);
    ``source`` defaults to the file name without extensions."""
    if part not in ("abstract", "fulltext"):
        raise ValueError(f"part must be 'abstract' or 'fulltext', got {part!r}")
    p = Path(path)
    report = PaperLoadReport(files=[str(p)])
    src = source or stem(p)
    for lineno, obj in iter_json_lines(p, report, EXPECTED):
        pid, why = _pid(obj)
        title = obj.get("title") or ""
        if pid is not None and not isinstance(title, str):
            pid, why = None, f"field 'title' is {type(title).__name__}, expected a string"
        text: str | None = None
        if pid is not None and part == "abstract":
            text, why = text_field(obj, "abstract")
        elif pid is not None:
            text, why = _fulltext(obj)
            if text is None and why is None:
                report.without_fulltext.append(pid)
                continue
        if pid is None or text is None:
            report.skipped.append(SkippedRecord(str(p), lineno, why or "no text"))
            continue
        report.documents.append(
            Document.create(
                source_id=pid,
                title=title.strip(),
                text=text,
                source=src,
                metadata=_metadata(obj, part),
            )
        )
    return report


def load_paper_abstracts(path: str | Path, source: str | None = None) -> PaperLoadReport:
    """Format ``paper_abstracts``: one document per paper, its abstract."""
    return load_papers_as(path, "abstract", source)


def load_paper_fulltexts(path: str | Path, source: str | None = None) -> PaperLoadReport:
    """Format ``paper_fulltexts``: one document per paper that has a full text, that text."""
    return load_papers_as(path, "fulltext", source)
