"""Building, inspecting and re-importing a VectorGraphRAG knowledge-graph directory.

A KG directory (``biorag kg build --out DIR``)::

    DIR/kg.sqlite        the triplet store (:class:`~biorag.kg.sqlite_store.SQLiteKGStore`)
    DIR/entities.*       the entity vector index (:class:`~biorag.kg.entity_index.EntityIndex`)
    DIR/triplets.csv     every triplet, for expert review (:mod:`biorag.kg.review`)
    DIR/build.json       what the last build read, extracted, dropped and stored

:func:`build_kg` reads *units* from a source, keeps the first or second half of them (in file
order) when asked, extracts triplets, adds them to the store (building into an existing DIR adds
to it; duplicates are counted, not stored twice), embeds the entities not indexed yet and
rewrites the review CSV. Sources (``fmt``):

* ``medmcqa`` / ``mirage``: the dataset loader's questions (MedMCQA: single-choice only; MIRAGE:
  ``split`` names a subset); one triplet per QA pair from the question and its correct answer,
  plus the explanation where one is known (MedMCQA's ``exp``, read from the same file, or from
  ``explanations`` for MIRAGE, whose medmcqa qids are MedMCQA ids).
* ``jsonl``: one record per line, either a triplet ``{subject, predicate, object[, source_id,
  model]}`` (stored as given) or a QA pair ``{question, answer[, id, explanation|exp]}``.
* ``text``: a text file or a folder of ``*.txt``/``*.md`` files; paragraphs (separated by blank
  lines) are the units, one triplet per sentence.

Extraction uses the LLM when one is configured, else the rule-based floor (see
:mod:`biorag.kg.extract_triplets`). Every unit that yields no triplet is reported with where it
is (``file:line`` or the question id) and why.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import numpy as np

from biorag.errors import BioragError, InputFormatError
from biorag.kg.entity_index import FAISS, FORMAT, META, VECTORS, EntityIndex
from biorag.kg.extract_triplets import (
    RULE_MODEL,
    QAPair,
    extract_qa_triplets,
    extract_text_triplets,
    make_triplet,
    qa_pairs_from_items,
    read_explanations,
)
from biorag.kg.models import Triplet, normalize_key
from biorag.kg.review import ImportReport, import_review_csv, write_review_csv
from biorag.kg.sqlite_store import FILENAME
from biorag.kg.store import open_store
from biorag.util.files import write_json_atomic

__all__ = [
    "BUILD_FILE",
    "FORMATS",
    "REVIEW_FILE",
    "BuildReport",
    "Dropped",
    "Sources",
    "build_kg",
    "import_csv",
    "kg_stats",
    "read_sources",
    "require_kg",
    "sync_entity_index",
    "take_half",
]

FORMATS: tuple[str, ...] = ("medmcqa", "mirage", "jsonl", "text")
HALVES: tuple[str, ...] = ("all", "first", "second")
REVIEW_FILE = "triplets.csv"
BUILD_FILE = "build.json"
TEXT_SUFFIXES = (".txt", ".md")
Half = Literal["all", "first", "second"]
Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


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


@dataclass
class BuildReport:
    """What :func:`build_kg` did (``to_dict`` is what ``biorag kg build --json`` prints)."""

    kg: str
    source: str
    format: str
    half: str
    extractor: str
    units: int = 0
    units_kept: int = 0
    extracted: int = 0
    added: int = 0
    duplicates: int = 0
    dropped: list[Dropped] = field(default_factory=list)
    triplets_total: int = 0
    entities_total: int = 0
    entities_embedded: int = 0
    files: dict[str, str] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)

    def dropped_by_reason(self) -> dict[str, int]:
        return dict(Counter(d.reason for d in self.dropped).most_common())

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["dropped_count"] = len(self.dropped)
        d["dropped_by_reason"] = self.dropped_by_reason()
        return d


# -- reading ---------------------------------------------------------------------------------


def take_half(units: Sequence[Any], half: str) -> list[Any]:
    """``first``: units ``[0, n//2)``; ``second``: ``[n//2, n)``; ``all``: every unit.

    With ``biorag eval --limit N`` (N <= n//2) the questions asked are in the first half, so a
    KG built from ``--half second`` holds none of their answers' explanations.
    """
    if half not in HALVES:
        raise BioragError(f"--half must be one of {', '.join(HALVES)}, not {half!r}")
    mid = len(units) // 2
    if half == "first":
        return list(units[:mid])
    if half == "second":
        return list(units[mid:])
    return list(units)


def _check_source(path: Path) -> None:
    if not path.exists():
        raise BioragError(f"--from {path}: no such file or folder")


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
    from biorag.eval.datasets import load_dataset

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
                raise BioragError(f"--explanations {exp_file}: no such file")
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
        raise BioragError(f"--from {path} is a folder: --format jsonl reads one .jsonl file")
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
            f"{path}: no usable record (first: {first.where}: {first.reason}); --format jsonl "
            'expects {"subject", "predicate", "object"} or {"question", "answer"} per line'
        )
    return src


def _text_files(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in TEXT_SUFFIXES)
    if not files:
        raise BioragError(f"--from {path}: no {' or '.join(TEXT_SUFFIXES)} files in the folder")
    return files


def _paragraphs(text: str) -> list[tuple[int, str]]:
    """``(first line number, paragraph)`` of blank-line separated paragraphs."""
    out: list[tuple[int, str]] = []
    start, lines = 0, []
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
        raise BioragError(f"unknown --format {fmt!r}: use one of {', '.join(FORMATS)}")
    if half not in HALVES:
        raise BioragError(f"--half must be one of {', '.join(HALVES)}, not {half!r}")
    if limit is not None and limit < 1:
        raise BioragError("--limit must be at least 1")
    path = Path(path)
    _check_source(path)
    if split is not None and fmt not in ("medmcqa", "mirage"):
        raise BioragError("--split applies to --format medmcqa and mirage")
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
        raise BioragError("--explanations applies to --format medmcqa and mirage")
    if fmt == "jsonl":
        return _read_jsonl(path, half=half, limit=limit, use_explanation=use_explanation)
    return _read_text(path, half=half, limit=limit)


# -- the entity index ------------------------------------------------------------------------


def sync_entity_index(
    directory: str | Path, embedder: Any, names: Sequence[str], *, prune: bool = False
) -> tuple[int, int]:
    """Embed the names not indexed yet; with ``prune`` first drop indexed names not in ``names``.

    Returns ``(embedded, removed)``. Pruning keeps the vectors of the remaining names (no
    re-embedding): it deletes ``entities.json`` first (a crash then leaves no index, rebuilt from
    scratch on the next sync), writes the kept rows, then the names.
    """
    directory = Path(directory)
    idx = EntityIndex.open(directory, embedder)
    removed = 0
    if prune and len(idx):
        keep = {normalize_key(n) for n in names}
        rows = [i for i, n in enumerate(idx.names) if normalize_key(n) in keep]
        removed = len(idx) - len(rows)
        if removed:
            (directory / META).unlink(missing_ok=True)
            (directory / FAISS).unlink(missing_ok=True)
            tmp = directory / f".{VECTORS}.prune.npy"
            np.save(tmp, np.ascontiguousarray(idx.vectors[rows], dtype=np.float32))
            tmp.replace(directory / VECTORS)
            meta = {
                "format": FORMAT,
                "model_id": idx.model_id,
                "dim": idx.dim,
                "names": [idx.names[i] for i in rows],
            }
            write_json_atomic(directory / META, meta)
            idx = EntityIndex.open(directory, embedder)  # rebuilds the FAISS file
    return idx.sync(names), removed


# -- building --------------------------------------------------------------------------------


async def _extract(
    src: Sources, llm: Any | None, batch_size: int, use_explanation: bool
) -> tuple[list[Triplet], list[tuple[str, str]], dict[str, int]]:
    triplets: list[Triplet] = []
    dropped: list[tuple[str, str]] = []
    stats: Counter[str] = Counter()
    try:
        if src.pairs:
            rep = await extract_qa_triplets(
                src.pairs, llm, batch_size=batch_size, use_explanation=use_explanation
            )
            triplets += rep.triplets
            dropped += rep.dropped
            stats.update(rep.stats)
        if src.texts:
            rep = await extract_text_triplets(src.texts, llm)
            triplets += rep.triplets
            dropped += rep.dropped
            stats.update(rep.stats)
    finally:
        if llm is not None:
            await llm.aclose()
    return triplets, dropped, dict(stats)


def build_kg(
    source: str | Path,
    fmt: str,
    out: str | Path,
    *,
    embedder: Any,
    llm: Any | None = None,
    batch_size: int = 1,
    use_explanation: bool = True,
    half: str = "all",
    split: str | None = None,
    limit: int | None = None,
    explanations: str | Path | None = None,
    progress: Progress = _quiet,
) -> BuildReport:
    """Read, extract, store, index entities, write the review CSV and ``build.json``."""
    if batch_size < 1:
        raise BioragError("--batch-size must be at least 1")
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise BioragError(f"--out {out} is a file: pass a directory for the knowledge graph")
    if (out / META).is_file():  # another embedding model: fail before anything is stored
        EntityIndex.open(out, embedder)
    seconds: dict[str, float] = {}
    t0 = time.perf_counter()
    src = read_sources(
        source,
        fmt,
        half=half,
        split=split,
        limit=limit,
        use_explanation=use_explanation,
        explanations=explanations,
    )
    seconds["read"] = time.perf_counter() - t0
    report = BuildReport(
        kg=str(out),
        source=str(source),
        format=fmt,
        half=half,
        extractor=RULE_MODEL if llm is None else f"llm:{llm.model}",
        units=src.units,
        units_kept=src.kept,
        dropped=list(src.skipped),
    )
    n_units = len(src.pairs) + len(src.texts)
    if n_units:
        progress(
            f"extracting triplets from {n_units} {'QA pairs' if src.pairs else 'paragraphs'} "
            f"({report.extractor})"
        )
    t0 = time.perf_counter()
    extracted, dropped, stats = asyncio.run(_extract(src, llm, batch_size, use_explanation))
    seconds["extract"] = time.perf_counter() - t0
    report.stats = stats
    for sid, why in dropped:
        report.dropped.append(Dropped(src.where.get(sid, sid), why, sid))
    located = [*src.given, *((src.where.get(t.source_id, t.source_id), t) for t in extracted)]
    report.extracted = len(located)
    store = open_store(out)
    try:
        t0 = time.perf_counter()
        progress(f"storing {len(located)} triplets in {out / FILENAME}")
        added = store.add_triplets(t for _, t in located)
        seconds["store"] = time.perf_counter() - t0
        report.added, report.duplicates = added.added, added.duplicates
        for i, why in added.invalid:
            where, t = located[i]
            report.dropped.append(Dropped(where, why, t.source_id))
        t0 = time.perf_counter()
        names = store.entities()
        progress(f"embedding new entities ({len(names)} in the graph)")
        report.entities_embedded, _ = sync_entity_index(out, embedder, names)
        seconds["embed_entities"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        csv_path = write_review_csv(store, out / REVIEW_FILE)
        seconds["review_csv"] = time.perf_counter() - t0
        report.triplets_total = store.count_triplets()
        report.entities_total = store.count_entities()
    finally:
        store.close()
    report.files = {
        "store": str(out / FILENAME),
        "entity_index": str(out / META),
        "review_csv": str(csv_path),
        "build": str(out / BUILD_FILE),
    }
    report.seconds = {k: round(v, 3) for k, v in seconds.items()}
    record = report.to_dict()
    record["built_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    record["embed_model"] = str(getattr(embedder, "model_id", ""))
    write_json_atomic(out / BUILD_FILE, record)
    return report


# -- opening, stats, import ------------------------------------------------------------------


def require_kg(directory: str | Path) -> Path:
    """``directory`` if it holds a knowledge graph (``kg.sqlite``), else a one-line error."""
    d = Path(directory)
    if not d.is_dir():
        raise BioragError(
            f"--kg {d}: no such knowledge-graph directory (build one with biorag kg build --out)"
        )
    if not (d / FILENAME).is_file():
        raise BioragError(f"--kg {d}: no {FILENAME} in it; build one with biorag kg build --out")
    return d


def kg_stats(directory: str | Path, top: int = 10) -> dict[str, Any]:
    """Counts, the most frequent predicates and subjects, the entity index and the last build."""
    d = require_kg(directory)
    store = open_store(d)
    db = store.db  # the SQLite store's connection: the aggregate queries below are SQL
    try:
        one = lambda sql: db.execute(sql).fetchone()[0]  # noqa: E731
        out: dict[str, Any] = {
            "kg": str(d),
            "store": str(d / FILENAME),
            "store_bytes": (d / FILENAME).stat().st_size,
            "triplets": one("SELECT count(*) FROM triplets"),
            "entities": one("SELECT count(*) FROM entities"),
            "predicates": one("SELECT count(DISTINCT predicate_key) FROM triplets"),
            "sources": one("SELECT count(DISTINCT source_id) FROM triplets"),
            "models": dict(
                db.execute("SELECT model, count(*) FROM triplets GROUP BY model ORDER BY 2 DESC")
            ),
            "top_predicates": [
                {"predicate": p, "triplets": n}
                for p, n in db.execute(
                    "SELECT min(predicate), count(*) FROM triplets GROUP BY predicate_key"
                    " ORDER BY 2 DESC, 1 LIMIT ?",
                    (top,),
                )
            ],
            "top_subjects": [
                {"entity": e, "out_degree": n}
                for e, n in db.execute(
                    "SELECT e.name, c.n FROM (SELECT subject_id, count(*) AS n FROM triplets"
                    " GROUP BY subject_id ORDER BY n DESC, subject_id LIMIT ?) c"
                    " JOIN entities e ON e.id = c.subject_id ORDER BY c.n DESC, e.id",
                    (top,),
                )
            ],
        }
        keys = {r[0] for r in db.execute("SELECT key FROM entities")}
    finally:
        store.close()
    meta_path = d / META
    if meta_path.is_file():
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        indexed = {normalize_key(str(n)) for n in meta.get("names", [])}
        out["entity_index"] = {
            "model_id": meta.get("model_id"),
            "dim": meta.get("dim"),
            "indexed": len(meta.get("names", [])),
            "not_indexed": len(keys - indexed),
            "stale": len(indexed - keys),
        }
    else:
        out["entity_index"] = None
    review = d / REVIEW_FILE
    out["review_csv"] = str(review) if review.is_file() else None
    build = d / BUILD_FILE
    if build.is_file():
        b = json.loads(build.read_text(encoding="utf-8"))
        out["last_build"] = {
            k: b.get(k)
            for k in (
                "built_at",
                "source",
                "format",
                "half",
                "extractor",
                "embed_model",
                "units_kept",
                "extracted",
                "added",
                "dropped_count",
            )
        }
    return out


def _remove_db(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


@dataclass
class ImportResult:
    """What :func:`import_csv` did: the CSV report and the graph afterwards."""

    report: ImportReport
    mode: str
    triplets_before: int
    triplets_total: int
    entities_total: int
    entities_embedded: int
    entities_removed: int
    review_csv_rewritten: bool

    def to_dict(self) -> dict[str, Any]:
        r = self.report
        return {
            "mode": self.mode,
            "added": r.added,
            "duplicates": r.duplicates,
            "rejected": [{"line": line, "reason": why} for line, why in r.rejected],
            "triplets_before": self.triplets_before,
            "triplets_total": self.triplets_total,
            "entities_total": self.entities_total,
            "entities_embedded": self.entities_embedded,
            "entities_removed": self.entities_removed,
            "review_csv_rewritten": self.review_csv_rewritten,
        }


def import_csv(
    directory: str | Path, csv_file: str | Path, *, embedder: Any, replace: bool = True
) -> ImportResult:
    """Load a reviewed CSV into the KG at ``directory`` and re-sync its entity index.

    ``replace`` (default): the graph becomes exactly the CSV's valid rows. The rows go into a new
    store beside the old one, which replaces it only once the whole file was read (a CSV with a
    bad header changes nothing); entities no longer in the graph leave the entity index.
    ``replace=False`` adds the rows to the graph. Unless ``csv_file`` is ``DIR/triplets.csv``
    itself (whose rejected rows the expert still has to fix), that file is rewritten from the
    store afterwards.
    """
    d = require_kg(directory)
    csv_file = Path(csv_file)
    if not csv_file.is_file():
        raise BioragError(f"{csv_file}: no such CSV file")
    db_path = d / FILENAME
    store = open_store(d)
    try:
        before = store.count_triplets()
    finally:
        store.close()
    if replace:
        tmp = d / f".import.{os.getpid()}.sqlite"
        _remove_db(tmp)
        new = open_store(tmp)
        try:
            report = import_review_csv(csv_file, new)
        except BaseException:
            new.close()
            _remove_db(tmp)
            raise
        new.close()
        con = sqlite3.connect(tmp)  # fold the WAL into the file before it is renamed
        con.execute("PRAGMA journal_mode=DELETE")
        con.close()
        for suffix in ("-wal", "-shm"):
            Path(f"{db_path}{suffix}").unlink(missing_ok=True)
        os.replace(tmp, db_path)
    store = open_store(d)
    try:
        if not replace:
            report = import_review_csv(csv_file, store)
        names = store.entities()
        embedded, removed = sync_entity_index(d, embedder, names, prune=replace)
        review = d / REVIEW_FILE
        rewrite = not (review.exists() and review.resolve() == csv_file.resolve())
        if rewrite:
            write_review_csv(store, review)
        return ImportResult(
            report=report,
            mode="replace" if replace else "add",
            triplets_before=before,
            triplets_total=store.count_triplets(),
            entities_total=store.count_entities(),
            entities_embedded=embedded,
            entities_removed=removed,
            review_csv_rewritten=rewrite,
        )
    finally:
        store.close()
