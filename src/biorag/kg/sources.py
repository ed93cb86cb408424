"""Reading the inputs of a knowledge-graph build: QA datasets, JSONL records and text.

:func:`read_sources` reads *units* from a source and keeps the first or second half of them (in
file order, :func:`take_half`) when asked. Sources (``fmt``, one of :data:`FORMATS`):

* ``medmcqa`` / ``mirage``: the dataset loader's questions (MedMCQA: single-choice only; MIRAGE:
  ``split`` names a subset), as QA pairs from the question and its correct answer, plus the
  explanation where one is known (MedMCQA's ``exp``, read from the same file, or from
  ``explanations`` for MIRAGE, whose medmcqa qids are MedMCQA ids).
* ``jsonl``: one record per line, either a triplet ``{subject, predicate, object[, source_id,
  model]}`` (kept as given, once checked) or a QA pair ``{question, answer[, id,
  explanation|exp]}``.
* ``text``: a text file or a folder of ``*.txt``/``*.md`` files; paragraphs (separated by blank
  lines) are the units.

Every unit is located (``file:line`` or the question id); units that cannot be read at all are
reported as :class:`Dropped` with why.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from biorag.corpus.datasets import load_dataset
from biorag.errors import BioragError, InputFormatError
from biorag.kg.extract_triplets import QAPair, make_triplet, qa_pairs_from_items, read_explanations
from biorag.kg.models import Triplet

__all__ = ["FORMATS", "HALVES", "Dropped", "Sources", "read_sources", "take_half"]

FORMATS: tuple[str, ...] = ("medmcqa", "mirage", "jsonl", "text")
HALVES: tuple[str, ...] = ("all", "first", "second")
TEXT_SUFFIXES = (".txt", ".md")
Half = Literal["all", "first", "second"]


@dataclass
class Dropped:
    """A unit (record, question, paragraph) or triplet that did not make it into the store."""

    where: str
    reason: str
    source_id: str = ""


@dataclass
class Sources:
    """What :func:`read_sources` read: QA pairs, given triplets and texts, each with where it is.

    ``where`` maps a source id to its location (``file:line`` or ``file question <id>``);
    ``given`` holds the triplets of ``jsonl`` records (already checked) with their location;
    ``skipped`` the units that could not be read at all.
    """

    pairs: list[QAPair] = field(default_factory=list)
    given: list[tuple[str, Triplet]] = field(default_factory=list)
    texts: list[tuple[str, str]] = field(default_factory=list)
    where: dict[str, str] = field(default_factory=dict)
    skipped: list[Dropped] = field(default_factory=list)
    units: int = 0  # units read (before the half was taken)
    kept: int = 0  # units kept (after the half and the limit)


def take_half(units: Sequence[Any], half: str) -> list[Any]:
    """``first``: units ``[0, n//2)``; ``second``: ``[n//2, n)``; ``all``: every unit.

    An evaluation limited to N questions (N <= n//2) asks questions of the first half, so a
    KG built from the ``second`` half holds none of their answers' explanations.
    """
    if half not in HALVES:
        raise BioragError(f"half must be one of {', '.join(HALVES)}, not {half!r}", param="half")
    mid = len(units) // 2
    if half == "first":
        return list(units[:mid])
    if half == "second":
        return list(units[mid:])
    return list(units)


def _check_source(path: Path) -> None:
    if not path.exists():
        raise BioragError(f"{path}: no such file or folder", param="from")


def _read_qa_dataset(
    path: Path,
    fmt: str,
    *,
    half: str,
    split: str | None,
    limit: int | None,
    use_explanation: bool,
    explanations: Path | None,
) -> Sources:

    loaded = load_dataset(fmt, path, split=split)
    src = Sources(units=len(loaded.items))
    for rec in loaded.skipped:
        src.skipped.append(Dropped(rec.where(), rec.reason))
    items = take_half(loaded.items, half)[:limit]
    src.kept = len(items)
    exp: dict[str, str] = {}
    if use_explanation:
        exp_file = explanations or (path if fmt == "medmcqa" else None)
        if exp_file is not None:
            if exp_file.is_dir():
                exp_file = exp_file / "dev.json"
            if not exp_file.is_file():
                raise BioragError(f"{exp_file}: no such file", param="explanations")
            raw = read_explanations(exp_file)
            # MIRAGE ids are "<subset>/<qid>"; MedMCQA's explanations are keyed by the qid
            exp = {it.id: raw.get(it.id) or raw.get(it.id.rsplit("/", 1)[-1], "") for it in items}
    name = path.name if path.is_file() else str(path)
    for it in items:
        src.where[it.id] = f"{name} question {it.id}"
    pairs = qa_pairs_from_items(items, exp)
    have = {p.id for p in pairs}
    for it in items:
        if it.id not in have:
            src.skipped.append(Dropped(src.where[it.id], "no correct answer text", it.id))
    src.pairs = pairs
    return src


def _str(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def _read_jsonl(path: Path, *, half: str, limit: int | None, use_explanation: bool) -> Sources:
    if path.is_dir():
        raise BioragError(f"{path} is a folder: format jsonl reads one .jsonl file", param="from")
    src = Sources()
    units: list[tuple[int, Any]] = []
    try:
        with path.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    units.append((n, json.loads(line)))
                except json.JSONDecodeError as e:
                    src.skipped.append(Dropped(f"{path}:{n}", f"not JSON ({e.msg})"))
    except UnicodeDecodeError as e:
        raise InputFormatError(f"{path} is not UTF-8 text ({e})") from e
    src.units = len(units)
    kept = take_half(units, half)[:limit]
    src.kept = len(kept)
    for n, rec in kept:
        where = f"{path}:{n}"
        if not isinstance(rec, dict):
            src.skipped.append(Dropped(where, f"a JSON {type(rec).__name__}, not an object"))
            continue
        if any(k in rec for k in ("subject", "predicate", "object")):
            sid = _str(rec.get("source_id")) or _str(str(rec.get("id") or "")) or f"{path.name}:{n}"
            t = make_triplet(
                rec.get("subject"),
                rec.get("predicate"),
                rec.get("object"),
                sid,
                _str(rec.get("model")) or "given",
            )
            if isinstance(t, Triplet):
                src.given.append((where, t))
            else:
                src.skipped.append(Dropped(where, t, sid))
        elif "question" in rec and "answer" in rec:
            question, answer = _str(rec.get("question")), _str(str(rec.get("answer") or ""))
            sid = _str(str(rec.get("id") or "")) or f"{path.name}:{n}"
            if not (question and answer):
                src.skipped.append(Dropped(where, "empty question or answer", sid))
                continue
            if sid in src.where:
                src.skipped.append(Dropped(where, f"duplicate id {sid!r}", sid))
                continue
            exp = _str(rec.get("explanation") or rec.get("exp")) if use_explanation else ""
            src.pairs.append(QAPair(sid, question, answer, exp))
            src.where[sid] = where
        else:
            src.skipped.append(
                Dropped(
                    where,
                    "neither subject/predicate/object nor question/answer fields",
                )
            )
    if units and not (src.given or src.pairs) and src.skipped:
        first = src.skipped[0]
        raise InputFormatError(
            f"{path}: no usable record (first: {first.where}: {first.reason}); format jsonl "
            'expects {"subject", "predicate", "object"} or {"question", "answer"} per line'
        )
    return src


def _text_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES)
    if not files:
        raise BioragError(
            f"{path}: no {' or '.join(TEXT_SUFFIXES)} files in the folder", param="from"
        )
    return files


def _paragraphs(text: str) -> list[tuple[int, str]]:
    """``(first line number, paragraph)`` of blank-line separated paragraphs."""
    out: list[tuple[int, str]] = []
    start = 0
    lines: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            if not lines:
                start = n
            lines.append(line.strip())
        elif lines:
            out.append((start, " ".join(lines)))
            lines = []
    if lines:
        out.append((start, " ".join(lines)))
    return out


def _read_text(path: Path, *, half: str, limit: int | None) -> Sources:
    src = Sources()
    units: list[tuple[str, str]] = []
    for f in _text_files(path):
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError as e:
            raise InputFormatError(f"{f} is not UTF-8 text ({e})") from e
        for line, para in _paragraphs(text):
            sid = f"{f.name}:{line}"
            src.where[sid] = f"{f}:{line}"
            units.append((sid, para))
    src.units = len(units)
    src.texts = take_half(units, half)[:limit]
    src.kept = len(src.texts)
    return src


def read_sources(
    path: str | Path,
    fmt: str,
    *,
    half: str = "all",
    split: str | None = None,
    limit: int | None = None,
    use_explanation: bool = True,
    explanations: str | Path | None = None,
) -> Sources:
    """Read the units of ``path`` in ``fmt`` (see the module docstring), keeping ``half``."""
    if fmt not in FORMATS:
        raise BioragError(
            f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}", param="format"
        )
    if half not in HALVES:
        raise BioragError(f"half must be one of {', '.join(HALVES)}, not {half!r}", param="half")
    if limit is not None and limit < 1:
        raise BioragError("limit must be at least 1", param="limit")
    path = Path(path)
    _check_source(path)
    if split is not None and fmt not in ("medmcqa", "mirage"):
        raise BioragError("split applies to the formats medmcqa and mirage only", param="split")
    if fmt in ("medmcqa", "mirage"):
        return _read_qa_dataset(
            path,
            fmt,
            half=half,
            split=split,
            limit=limit,
            use_explanation=use_explanation,
            explanations=Path(explanations) if explanations else None,
        )
    if explanations:
        raise BioragError(
            "explanations apply to the formats medmcqa and mirage only", param="explanations"
        )
    if fmt == "jsonl":
        return _read_jsonl(path, half=half, limit=limit, use_explanation=use_explanation)
    return _read_text(path, half=half, limit=limit)
