"""Helpers shared by the loaders: gzip-aware opening, peeking, JSON reading, error messages."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from biorag.corpus.models import LoadReport, SkippedRecord
from biorag.errors import InputFormatError

FORMATS: tuple[str, ...] = ("jsonl", "medrag", "pubmed_xml", "pubmedqa", "bioasq", "textdir")
FORMAT_HINT = "choose the format, one of: " + ", ".join(FORMATS)
_GZIP_MAGIC = b"\x1f\x8b"
#: Errors a truncated or corrupt gzip stream raises while reading.
GZIP_ERRORS = (EOFError, gzip.BadGzipFile, zlib.error)

PathLike = str | Path


def as_paths(paths: PathLike | Iterable[PathLike]) -> list[Path]:
    """One path or many, as a list of ``Path``."""
    if isinstance(paths, str | Path):
        return [Path(paths)]
    return [Path(p) for p in paths]


def format_error(path: PathLike, expected: str, found: str, fix: str) -> InputFormatError:
    """An :class:`InputFormatError` naming the file, what was expected, what was found, the fix
    (a fix that names another format makes ``format`` the argument at fault)."""
    param = "format" if "format" in fix else None
    return InputFormatError(f"{path}: expected {expected}, but {found}. Fix: {fix}.", param=param)


def require_file(path: Path, expected: str) -> None:
    """Raise :class:`InputFormatError` unless ``path`` is an existing regular file."""
    if not path.exists():
        raise format_error(path, expected, "the path does not exist", "check the path")
    if path.is_dir():
        raise format_error(
            path,
            expected,
            "it is a directory",
            "pass the file itself, or read the folder as format textdir (its .txt/.md files)",
        )


def is_gzip(path: Path) -> bool:
    """Whether the file starts with the gzip magic number (whatever its extension)."""
    with open(path, "rb") as fh:
        return fh.read(2) == _GZIP_MAGIC


def open_binary(path: Path) -> IO[bytes]:
    """Open a file for binary reading, decompressing gzip transparently."""
    if is_gzip(path):
        return gzip.open(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def peek_text(path: Path, size: int = 8192) -> str:
    """The first ``size`` bytes of the (decompressed) file as text, BOM and leading blanks gone."""
    try:
        with open_binary(path) as fh:
            head = fh.read(size)
    except GZIP_ERRORS as e:
        raise format_error(
            path, "a readable file", f"gzip decompression failed ({e})", "re-download it"
        ) from e
    return head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")


def stem(path: Path) -> str:
    """The file name without ``.gz`` and its last extension (``a.jsonl.gz`` -> ``a``)."""
    name = path.name
    if name.lower().endswith(".gz"):
        name = name[:-3]
    return name.rsplit(".", 1)[0] if "." in name else name


def read_json(path: Path, expected: str) -> tuple[Any, str]:
    """Parse a whole JSON file (gzip-aware); returns the value and the raw text."""
    require_file(path, expected)
    try:
        with open_binary(path) as fh:
            raw_bytes = fh.read()
    except GZIP_ERRORS as e:
        raise format_error(
            path, expected, f"gzip decompression failed ({e})", "re-download it"
        ) from e
    try:
        raw = raw_bytes.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise format_error(path, expected, "it is not UTF-8 text", "convert it to UTF-8") from e
    try:
        return json.loads(raw), raw
    except json.JSONDecodeError as e:
        found = f"it is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})"
        fix = "repair the file"
        if raw.lstrip().startswith("{") and "\n{" in raw:
            fix = "if it holds one JSON object per line, read it as format jsonl"
        elif raw.lstrip().startswith("<"):
            fix = "if it is PubMed XML, read it as format pubmed_xml"
        raise format_error(path, expected, found, fix) from e


def line_of(raw: str, needle: str) -> int | None:
    """1-based line of the first occurrence of ``needle`` in ``raw`` (None when absent)."""
    i = raw.find(needle)
    return None if i < 0 else raw.count("\n", 0, i) + 1


def line_of_key(raw: str, key: str) -> int | None:
    """1-based line where the JSON object key ``key`` (``"key":``) first appears."""
    m = re.search(re.escape(json.dumps(key)) + r"\s*:", raw)
    return None if m is None else raw.count("\n", 0, m.start()) + 1


def iter_json_lines(path: Path, report: LoadReport, expected: str) -> Iterator[tuple[int, dict]]:
    """Yield ``(line number, object)`` for each JSON-object line; record bad lines in ``report``.

    Raises :class:`InputFormatError` when the file is clearly not JSON Lines: it starts with a JSON
    array or with markup, or no line at all is a JSON object.
    """
    require_file(path, expected)
    fname = str(path)
    skipped_before = len(report.skipped)
    seen_object = False
    first = True
    lineno = 0
    try:
        with open_binary(path) as fh:
            for lineno, raw in enumerate(fh, 1):
                try:
                    line = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
                except UnicodeDecodeError:
                    report.skipped.append(SkippedRecord(fname, lineno, "line is not UTF-8"))
                    continue
                s = line.strip()
                if not s:
                    continue
                if first:
                    first = False
                    if s[0] == "[":
                        raise format_error(
                            path,
                            expected,
                            "it starts with a JSON array",
                            "write one JSON object per line (e.g. `jq -c '.[]'`), or "
                            "read it as format pubmedqa or bioasq if it is such a file",
                        )
                    if s[0] == "<":
                        raise format_error(
                            path,
                            expected,
                            "it starts with markup (XML/HTML)",
                            "read it as format pubmed_xml if it is PubMed XML",
                        )
                try:
                    obj = json.loads(s)
                except json.JSONDecodeError as e:
                    report.skipped.append(SkippedRecord(fname, lineno, f"invalid JSON: {e.msg}"))
                    continue
                if not isinstance(obj, dict):
                    kind = type(obj).__name__
                    report.skipped.append(
                        SkippedRecord(fname, lineno, f"not a JSON object ({kind})")
                    )
                    continue
                seen_object = True
                yield lineno, obj
    except GZIP_ERRORS as e:
        if not seen_object:
            raise format_error(
                path, expected, f"gzip decompression failed ({e})", "re-download it"
            ) from e
        report.skipped.append(
            SkippedRecord(fname, lineno + 1, f"file truncated or corrupt ({e}); rest not read")
        )
    if not seen_object and len(report.skipped) > skipped_before:
        raise format_error(
            path,
            expected,
            "no line is a JSON object",
            "if the file is one JSON document, read it as format pubmedqa or bioasq; "
            "otherwise write one JSON object per line",
        )


def text_field(obj: dict, *names: str) -> tuple[str | None, str | None]:
    """The first present field among ``names`` as ``(text, None)``, or ``(None, reason)``."""
    for name in names:
        if name in obj and obj[name] is not None:
            value = obj[name]
            if not isinstance(value, str):
                return None, f"field {name!r} is {type(value).__name__}, expected a string"
            if not value.strip():
                return None, f"field {name!r} is empty"
            return value, None
    return None, "missing " + " or ".join(repr(n) for n in names)
