"""Plain-text folder loader: every ``.txt``/``.md``/``.markdown`` file under a folder, recursively.

``source_id`` = the path relative to the folder (POSIX separators); ``title`` = the first markdown
heading (``# ...``) when there is one, else the first non-empty line (at most 200 characters);
``text`` = the file with line endings normalized. Hidden files and folders are ignored; empty or
non-UTF-8 files are skipped and reported. A single text file may be given instead of a folder.
"""

from __future__ import annotations

import re
from pathlib import Path

from biorag.corpus.loaders._common import format_error
from biorag.corpus.models import Document, LoadReport, SkippedRecord

__all__ = ["TEXT_SUFFIXES", "load_textdir"]

TEXT_SUFFIXES = frozenset({".txt", ".md", ".markdown"})
EXPECTED = "a folder of .txt/.md files"
_HEADING_RE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)


def text_files(root: Path) -> list[Path]:
    """The text files under ``root`` (sorted, hidden paths excluded)."""
    return sorted(
        f
        for f in root.rglob("*")
        if f.suffix.lower() in TEXT_SUFFIXES
        and f.is_file()
        and not any(part.startswith(".") for part in f.relative_to(root).parts)
    )


def _title(text: str) -> str:
    m = _HEADING_RE.search(text)
    if m:
        return m.group(1).strip()
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:200]
    return ""


def load_textdir(path: str | Path, source: str | None = None) -> LoadReport:
    """Load a folder (or one file) of text/markdown; ``source`` defaults to the folder name."""
    root = Path(path)
    if not root.exists():
        raise format_error(root, EXPECTED, "the path does not exist", "check the path")
    if root.is_file():
        files, base = [root], root.parent
    else:
        files, base = text_files(root), root
        if not files:
            fix = "add .txt/.md files, or choose the format of the data files it holds"
            raise format_error(root, EXPECTED, "it holds no .txt/.md files", fix)
    src = source or (root.stem if root.is_file() else root.resolve().name)
    report = LoadReport(files=[str(f) for f in files])
    for f in files:
        try:
            text = f.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError as e:
            report.skipped.append(SkippedRecord(str(f), None, f"not UTF-8 text ({e.reason})"))
            continue
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        if not text.strip():
            report.skipped.append(SkippedRecord(str(f), None, "empty file"))
            continue
        report.documents.append(
            Document.create(
                source_id=f.relative_to(base).as_posix(),
                title=_title(text),
                text=text,
                source=src,
            )
        )
    return report
