"""Corpus loaders: files in eight formats -> :class:`LoadReport` (documents, skipped, files).

Formats: ``jsonl`` (generic JSON Lines), ``medrag`` (MedRAG snippets), ``pubmed_xml`` (PubMed
baseline XML), ``pubmedqa`` (PubMedQA JSON), ``bioasq`` (BioASQ Task B JSON, pooled across files),
``textdir`` (a folder of .txt/.md files), and ``paper_abstracts`` / ``paper_fulltexts`` (a paper
collection's abstracts or Markdown full texts, :mod:`.papers`; their report is a
:class:`~biorag.corpus.loaders.papers.PaperLoadReport`). A ``-`` in a format name reads as ``_``
(``paper-abstracts``). ``auto`` detects the format from the extension and by peeking at the
content; it never picks a paper format (one file holds both levels), but a JSON Lines file whose
records look like papers (``abstract``, no ``text``) is refused with a hint to choose one.
A folder given with ``auto`` is read as ``textdir`` when it holds more .txt/.md files than
corpus data files (.json, .jsonl, .xml, gzipped or not); otherwise each data file in it is
detected and loaded (so a BioASQ folder with a readme.txt loads as BioASQ).
A malformed record is skipped and reported with file and line; a file that is not what its
loader expects at all raises :class:`~biorag.errors.InputFormatError` naming the file, the
expectation and the fix.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from biorag.corpus.loaders._common import FORMATS as _BASE_FORMATS
from biorag.corpus.loaders._common import (
    PathLike,
    format_error,
    peek_text,
    read_json,
    require_file,
)
from biorag.corpus.loaders.bioasq import load_bioasq
from biorag.corpus.loaders.jsonl import load_jsonl
from biorag.corpus.loaders.medrag import load_medrag
from biorag.corpus.loaders.papers import (
    PAPER_FORMATS,
    PaperLoadReport,
    load_paper_abstracts,
    load_paper_fulltexts,
)
from biorag.corpus.loaders.pubmed_xml import load_pubmed_xml
from biorag.corpus.loaders.pubmedqa import load_pubmedqa
from biorag.corpus.loaders.textdir import TEXT_SUFFIXES, load_textdir, text_files
from biorag.corpus.models import LoadReport
from biorag.errors import InputFormatError

__all__ = [
    "FORMATS",
    "detect_format",
    "load_bioasq",
    "load_corpora",
    "load_corpus",
    "load_jsonl",
    "load_medrag",
    "load_paper_abstracts",
    "load_paper_fulltexts",
    "load_pubmed_xml",
    "load_pubmedqa",
    "load_textdir",
    "normalize_format",
]

FORMATS: tuple[str, ...] = (*_BASE_FORMATS, *PAPER_FORMATS)
FORMAT_HINT = "choose the format, one of: " + ", ".join(FORMATS)
_ALIASES = {
    "pubmed": "pubmed_xml",
    "xml": "pubmed_xml",
    "pubmed-xml": "pubmed_xml",
    "txt": "textdir",
    "md": "textdir",
    "text": "textdir",
    "folder": "textdir",
    "ndjson": "jsonl",
}
_SINGLE_FILE_LOADERS: dict[str, Callable[[Path, str | None], LoadReport]] = {
    "jsonl": load_jsonl,
    "medrag": load_medrag,
    "pubmed_xml": load_pubmed_xml,
    "pubmedqa": load_pubmedqa,
    "textdir": load_textdir,
    "paper_abstracts": load_paper_abstracts,
    "paper_fulltexts": load_paper_fulltexts,
}
_EXTENSIONS = {
    "jsonl": (".jsonl", ".ndjson"),
    "medrag": (".jsonl", ".ndjson"),
    "pubmed_xml": (".xml",),
    "pubmedqa": (".json",),
    "bioasq": (".json",),
    "paper_abstracts": (".jsonl", ".ndjson"),
    "paper_fulltexts": (".jsonl", ".ndjson"),
}
_BIOASQ_HEAD = re.compile(r'\{\s*"questions"\s*:')
_PUBMEDQA_HEAD = re.compile(r'\{\s*"[^"]*"\s*:\s*\{\s*"(?:QUESTION|CONTEXTS|LABELS)"')


def normalize_format(fmt: str) -> str:
    """The canonical format name for ``fmt`` (aliases such as ``pubmed``/``txt`` accepted)."""
    name = (fmt or "auto").strip().lower().replace("-", "_")
    name = _ALIASES.get(name, name)
    if name != "auto" and name not in FORMATS:
        raise InputFormatError(
            f"unknown corpus format {fmt!r}: {FORMAT_HINT} (or auto)", param="format"
        )
    return name


def _suffix(path: Path) -> str:
    name = path.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    return "." + name.rsplit(".", 1)[-1] if "." in name else ""


def _classify_json_value(data: object) -> str | None:
    if isinstance(data, dict):
        if isinstance(data.get("questions"), list):
            return "bioasq"
        if any(isinstance(v, dict) and "CONTEXTS" in v for v in data.values()):
            return "pubmedqa"
    return None


def _classify_record(obj: dict) -> str:
    return "medrag" if "content" in obj and "text" not in obj else "jsonl"


def detect_format(path: PathLike) -> str:
    """Guess a file's (or folder's) format from its extension and first bytes."""
    p = Path(path)
    if not p.exists():
        raise format_error(
            p, "a corpus file or folder", "the path does not exist", "check the path"
        )
    if p.is_dir():
        return "textdir"
    suffix = _suffix(p)
    if suffix in TEXT_SUFFIXES:
        return "textdir"
    head = peek_text(p)
    if not head:
        raise format_error(p, "a corpus file", "it is empty", "give a non-empty file")
    if head.startswith("<"):
        if "<PubmedArticleSet" in head or "<PubmedArticle" in head:
            return "pubmed_xml"
        raise format_error(
            p, "PubMed XML", "it is XML/HTML without <PubmedArticleSet>", FORMAT_HINT
        )
    if head.startswith("["):
        raise format_error(
            p, "a corpus file", "it is a JSON array", "write one object per line (JSON Lines)"
        )
    if head.startswith("{"):
        if _BIOASQ_HEAD.match(head):
            return "bioasq"
        if _PUBMEDQA_HEAD.match(head):
            return "pubmedqa"
        first = head.split("\n", 1)[0]
        try:
            obj = json.loads(first)
        except json.JSONDecodeError:
            obj = None
        if isinstance(obj, dict):
            kind = _classify_json_value(obj)
            if kind:
                return kind
            if "abstract" in obj and not {"text", "contents", "content"} & set(obj):
                raise format_error(
                    p,
                    "a format that format auto can tell",
                    "its records look like papers ('abstract', no 'text')",
                    "read it as format paper-abstracts (one document per abstract) or "
                    "paper-fulltexts (one per Markdown full text)",
                )
            if suffix in (".jsonl", ".ndjson") or {"text", "contents", "content"} & set(obj):
                return _classify_record(obj)
            raise format_error(
                p, "a known JSON corpus layout", "its layout is not recognized", FORMAT_HINT
            )
        if suffix in (".jsonl", ".ndjson"):
            return "jsonl"  # the loader reports the bad lines
        kind = _classify_json_value(read_json(p, "a corpus JSON file")[0])
        if kind:
            return kind
        raise format_error(
            p, "a known JSON corpus layout", "its layout is not recognized", FORMAT_HINT
        )
    raise format_error(
        p, "a corpus file (JSON, JSON Lines, PubMed XML, text)", "it is none", FORMAT_HINT
    )


def _data_files(folder: Path, fmt: str) -> list[Path]:
    """Corpus files under ``folder`` for ``fmt`` (all known kinds for ``auto``), sorted."""
    exts = (
        set(_EXTENSIONS.get(fmt, ()))
        if fmt != "auto"
        else {e for v in _EXTENSIONS.values() for e in v}
    )
    return sorted(
        f
        for f in folder.rglob("*")
        if f.is_file()
        and _suffix(f) in exts
        and not any(part.startswith(".") for part in f.relative_to(folder).parts)
    )


def _load_group(fmt: str, files: list[Path], source: str | None) -> LoadReport:
    if fmt == "bioasq":
        return load_bioasq(files, source)
    report = PaperLoadReport() if fmt in PAPER_FORMATS else LoadReport()
    for f in files:
        report.extend(_SINGLE_FILE_LOADERS[fmt](f, source))
    return report


def load_corpora(
    paths: Iterable[PathLike], fmt: str = "auto", source: str | None = None
) -> LoadReport:
    """Load many files/folders into one report; files of one format are loaded together
    (BioASQ files are pooled, so their snippets are de-duplicated across files)."""
    fmt = normalize_format(fmt)
    groups: dict[str, list[Path]] = {}
    report = PaperLoadReport() if fmt in PAPER_FORMATS else LoadReport()
    for path in paths:
        p = Path(path)
        if p.is_dir():
            files = _data_files(p, fmt) if fmt != "textdir" else []
            if fmt == "textdir" or (fmt == "auto" and len(text_files(p)) > len(files)):
                report.extend(load_textdir(p, source))
                continue
            if not files:
                expected = "a folder of corpus files" if fmt == "auto" else f"{fmt} files"
                raise format_error(p, expected, "it holds none", FORMAT_HINT)
        else:
            if fmt != "textdir":
                require_file(p, f"a {fmt} corpus file" if fmt != "auto" else "a corpus file")
            files = [p]
        for f in files:
            groups.setdefault(fmt if fmt != "auto" else detect_format(f), []).append(f)
    for kind, files in groups.items():
        report.extend(_load_group(kind, files, source))
    return report


def load_corpus(path: PathLike, fmt: str = "auto", source: str | None = None) -> LoadReport:
    """Load one corpus file or folder in format ``fmt`` (``auto`` detects it)."""
    return load_corpora([path], fmt, source)
