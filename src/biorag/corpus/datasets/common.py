"""What every dataset loader shares: the result type, file reading, skips, filters and limits.

A loader parses *every* record of its files into :class:`QAItem` (a malformed one becomes a
:class:`SkippedRecord` with its file and line or key), then :meth:`Collector.finish` applies the
loader's filter (split, subset, type), then ``limit``. A file none of whose records parse is not
the file the loader expects: it raises :class:`InputFormatError` naming the file, what was
expected and the fix.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biorag.corpus.datasets.base import QAItem
from biorag.corpus.loaders._common import format_error as format_error
from biorag.corpus.models import SkippedRecord
from biorag.errors import ConfigError

PathArg = str | Path | Sequence[str | Path]
YESNO = ("yes", "no", "maybe")


@dataclass
class DatasetLoad:
    """A loaded benchmark: its items, the records skipped (file, line, reason), and counts."""

    items: list[QAItem]
    skipped: list[SkippedRecord] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)


def check_choice(value: str | None, allowed: Iterable[str], what: str, dataset: str) -> None:
    """Raise :class:`ConfigError` unless ``value`` is None or one of ``allowed``."""
    allowed = list(allowed)
    if value is not None and value not in allowed:
        choices = f"use one of: {', '.join(allowed)} (or none)" if allowed else "leave it unset"
        raise ConfigError(f"{dataset}: unknown {what} {value!r}; {choices}")


def resolve_file(path: str | Path, expected: str, default_names: Sequence[str] = ()) -> Path:
    """The file to read: ``path`` itself, or the first of ``default_names`` inside a folder."""
    p = Path(path)
    if not p.exists():
        raise format_error(p, expected, "the path does not exist", "check the path")
    if p.is_dir():
        for name in default_names:
            if (p / name).is_file():
                return p / name
        hint = f"pass the file itself (e.g. {default_names[0]})" if default_names else "pass a file"
        raise format_error(p, expected, "it is a folder", hint)
    return p


def collect_files(path: PathArg, expected: str, pattern: str) -> list[Path]:
    """One file, many files, or every ``pattern`` file under a folder (sorted), each existing."""
    paths = [Path(path)] if isinstance(path, str | Path) else [Path(p) for p in path]
    out: list[Path] = []
    for p in paths:
        if not p.exists():
            raise format_error(p, expected, "the path does not exist", "check the path")
        if p.is_dir():
            found = sorted(p.rglob(pattern), key=natural_key)
            if not found:
                raise format_error(
                    p, expected, f"the folder holds no {pattern} file", "pass the right folder"
                )
            out.extend(found)
        else:
            out.append(p)
    if not out:
        raise format_error(str(path), expected, "no file was given", "pass a file or a folder")
    return out


def natural_key(p: Path) -> list[Any]:
    """Sort key putting ``7B1`` before ``10B1``: digit runs compare as numbers."""
    return [int(t) if t.isdigit() else t.lower() for t in re.split(r"(\d+)", str(p))]


def read_text(path: Path, expected: str) -> str:
    """The whole file as UTF-8 text (BOM dropped)."""
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as e:
        raise format_error(path, expected, "it is not UTF-8 text", "convert it to UTF-8") from e
    except OSError as e:
        raise format_error(path, expected, f"it cannot be read ({e})", "check the path") from e


def read_json(path: Path, expected: str) -> tuple[Any, str]:
    """Parse a whole JSON file; returns the value and the raw text (for line look-ups)."""
    raw = read_text(path, expected)
    try:
        return json.loads(raw), raw
    except json.JSONDecodeError as e:
        found = f"it is not valid JSON ({e.msg} at line {e.lineno}, column {e.colno})"
        fix = "pass the right file, or repair it"
        if e.msg == "Extra data" and raw.lstrip().startswith("{"):
            fix = "it looks like JSON Lines: pass it to a loader that reads JSON Lines"
        raise format_error(path, expected, found, fix) from e


def line_of(raw: str, needle: str, after: str | None = None) -> int | None:
    """1-based line of ``needle``'s first occurrence in ``raw`` (after ``after``'s), or None."""
    start = raw.find(after) if after is not None else 0
    i = raw.find(needle, max(start, 0))
    return None if i < 0 else raw.count("\n", 0, i) + 1


def id_line(raw: str, rec: Any) -> int | None:
    """The line of the record's ``id`` in ``raw`` (None when it has no string id)."""
    qid = rec.get("id") if isinstance(rec, dict) else None
    return line_of(raw, f'"{qid}"') if isinstance(qid, str) else None


def iter_records(
    path: Path, col: Collector, expected: str, list_keys: Sequence[str] = ()
) -> Iterator[tuple[int | None, str, dict, int]]:
    """Yield ``(line, where, record, index)`` from a JSON Lines file or a JSON array of objects
    (the form :meth:`Collector.read_records` takes).

    A whole-file JSON array (or an object holding one under a key of ``list_keys``) yields its
    elements (line None, ``where`` = ``record [i]``); otherwise each non-blank line is parsed.
    ``index`` counts records from 0 (bad ones included). Bad lines and non-object records are
    skipped into ``col``.
    """
    raw = read_text(path, expected)
    records: list[Any] | None = None
    try:
        whole = json.loads(raw)
    except json.JSONDecodeError:
        whole = None
    if isinstance(whole, list):
        records = whole
    elif isinstance(whole, dict):
        records = next((whole[k] for k in list_keys if isinstance(whole.get(k), list)), None)
        if records is None and "\n" in raw.strip():
            keys = ", ".join(repr(k) for k in list(whole)[:5])
            found = f"it is one JSON object (keys {keys}) without a list of records"
            fix = "pass JSON Lines (one record per line) or a JSON array of records"
            if list_keys:
                fix += ", or an object with a " + " or ".join(repr(k) for k in list_keys) + " list"
            raise format_error(path, expected, found, fix)
    if records is not None:
        for i, rec in enumerate(records):
            if isinstance(rec, dict):
                yield None, f"record [{i}]", rec, i
            else:
                col.skip(path, None, f"record [{i}]: not a JSON object")
        return
    index = -1
    for lineno, line in enumerate(raw.split("\n"), 1):
        s = line.strip()
        if not s:
            continue
        index += 1
        try:
            obj = json.loads(s)
        except json.JSONDecodeError as e:
            col.skip(path, lineno, f"invalid JSON: {e.msg}")
            continue
        if not isinstance(obj, dict):
            col.skip(path, lineno, f"not a JSON object ({type(obj).__name__})")
            continue
        yield lineno, f"line {lineno}", obj, index


def text_field(obj: dict, *names: str) -> str:
    """The first present field among ``names`` as a non-empty string; else :class:`ValueError`."""
    for name in names:
        value = obj.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise ValueError(f"field {name!r} is {type(value).__name__}, expected a string")
        if not value.strip():
            raise ValueError(f"field {name!r} is empty")
        return value
    raise ValueError("missing " + " or ".join(repr(n) for n in names))


def options_field(value: Any) -> dict[str, str]:
    """Answer options as ``{letter: text}`` from a dict, a list of texts or ``[{key, value}]``."""
    if isinstance(value, list):
        if all(isinstance(o, dict) and "key" in o and "value" in o for o in value):
            value = {str(o["key"]): o["value"] for o in value}
        else:
            value = {chr(ord("A") + i): o for i, o in enumerate(value)}
    if not isinstance(value, dict) or not value:
        raise ValueError("'options' is missing or not a non-empty mapping of letters to texts")
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(v, str | int | float) or isinstance(v, bool):
            raise ValueError(f"option {k!r} is {type(v).__name__}, expected text")
        out[str(k).strip()] = str(v)
    return out


def mc_type(options: dict[str, str]) -> str:
    """``"yesno"`` when every option is yes/no/maybe, else ``"multiple_choice"``."""
    texts = {v.strip().lower() for v in options.values()}
    return "yesno" if texts <= set(YESNO) else "multiple_choice"


def choice_item(
    dataset: str,
    qid: str,
    question: str,
    options: dict[str, str],
    gold: Any,
    field: str,
    **more: Any,
) -> QAItem:
    """A choice item (:func:`mc_type`) whose ``gold`` (the record's ``field``) must be one of
    the option letters, else :class:`ValueError`; ``more`` are further :class:`QAItem` fields."""
    if not isinstance(gold, str) or gold.strip() not in options:
        raise ValueError(f"{field!r} {gold!r} is not one of the option letters {list(options)}")
    return QAItem(
        id=qid,
        dataset=dataset,
        text=question.strip(),
        options=options,
        gold=gold.strip(),
        question_type=mc_type(options),  # type: ignore[arg-type]
        **more,
    )


def as_str_list(value: Any) -> list[str]:
    """A scalar or list of ids as a list of non-empty strings (order kept, duplicates dropped)."""
    items = value if isinstance(value, list) else [] if value is None else [value]
    out: list[str] = []
    for v in items:
        s = str(v).strip()
        if s and s not in out:
            out.append(s)
    return out


class Collector:
    """Gathers items and skipped records, keeps ids unique, and finishes a :class:`DatasetLoad`."""

    def __init__(self, dataset: str) -> None:
        self.dataset = dataset
        self.items: list[QAItem] = []
        self.skipped: list[SkippedRecord] = []
        self.files: list[str] = []
        self._where: dict[str, str] = {}
        self._parsed = 0  # records parsed, duplicates included
        self._file_parsed = 0
        self._file_skips = 0

    def start_file(self, path: Path) -> None:
        """Begin counting one file (for :meth:`end_file`)."""
        self.files.append(str(path))
        self._file_parsed = self._parsed
        self._file_skips = len(self.skipped)

    def end_file(self, path: Path, expected: str, fix: str) -> None:
        """Raise :class:`InputFormatError` when the file yielded skips and not one valid record."""
        if self._parsed == self._file_parsed and len(self.skipped) > self._file_skips:
            first = self.skipped[self._file_skips]
            n = len(self.skipped) - self._file_skips
            found = f"none of its {n} records is usable (first: {first.where()}: {first.reason})"
            raise format_error(path, expected, found, fix)

    def read_records(
        self,
        path: Path,
        records: Iterable[tuple[Any, ...]],
        make: Callable[..., QAItem | None],
        expected: str,
        fix: str,
        bad_line: Callable[..., int | None] | None = None,
    ) -> int:
        """Collect the items of one file; returns how many records ``make`` left out.

        ``records`` yields ``(line, where, *args)``: the record's line (None where the file is
        not read by lines), where it is (``"line 3"``, ``"record [2]"``) and what ``make`` takes.
        ``make(*args)`` builds the item, returns None for a record left out on purpose, or raises
        :class:`ValueError` for a malformed one, skipped at ``bad_line(*args)`` (default: its
        line). ``records`` may skip records into this collector itself. The file must give an
        item (:meth:`end_file`, with ``expected`` and ``fix``).
        """
        self.start_file(path)
        left_out = 0
        for line, where, *args in records:
            try:
                item = make(*args)
            except ValueError as e:
                self.skip(path, line if bad_line is None else bad_line(*args), f"{where}: {e}")
                continue
            if item is None:
                left_out += 1
                continue
            self.add(item, path, line, where)
        self.end_file(path, expected, fix)
        return left_out

    def skip(self, path: str | Path, line: int | None, reason: str) -> None:
        """Record a record that could not be used."""
        self.skipped.append(SkippedRecord(str(path), line, reason))

    def add(self, item: QAItem, path: str | Path, line: int | None, where: str) -> None:
        """Keep ``item`` unless its id was seen already (then it is skipped, naming the first)."""
        self._parsed += 1
        first = self._where.get(item.id)
        if first is not None:
            self.skip(path, line, f"{where}: duplicate id {item.id!r} (first at {first})")
            return
        self._where[item.id] = f"{Path(path).name} {where}"
        self.items.append(item)

    def finish(
        self,
        *,
        limit: int | None,
        split: str | None = None,
        setting: str | None = None,
        keep: Callable[[QAItem], bool] | None = None,
        **extra: Any,
    ) -> DatasetLoad:
        """Filter with ``keep``, then keep the first ``limit``; ``info`` counts every step."""
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            raise ConfigError(f"{self.dataset}: limit must be an integer >= 0, not {limit!r}")
        parsed = len(self.items)
        items = [it for it in self.items if keep(it)] if keep else list(self.items)
        selected = len(items)
        if limit is not None:
            items = items[:limit]
        info: dict[str, Any] = {
            "dataset": self.dataset,
            "files": self.files,
            "split": split,
            "setting": setting,
            "parsed": parsed,
            "selected": selected,
            "count": len(items),
            "skipped": len(self.skipped),
            "by_subset": dict(Counter(it.subset for it in items if it.subset)),
            "by_type": dict(Counter(it.question_type for it in items)),
        }
        info.update(extra)
        return DatasetLoad(items=items, skipped=list(self.skipped), info=info)

    def finish_subset(
        self,
        *,
        limit: int | None,
        split: str | None,
        setting: str | None,
        what: str = "split",
        blank: bool = True,
    ) -> DatasetLoad:
        """:meth:`finish` keeping the items of subset ``split`` (None: all), which must be one
        of the subsets read (``blank`` False: a blank subset cannot be chosen)."""
        subsets = sorted({it.subset for it in self.items if blank or it.subset})
        check_choice(split, subsets, what, self.dataset)
        return self.finish(
            limit=limit,
            split=split,
            setting=setting,
            keep=None if split is None else (lambda it: it.subset == split),
        )
