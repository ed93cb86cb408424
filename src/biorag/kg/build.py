"""Building a VectorGraphRAG knowledge-graph directory from a source.

:func:`build_kg` reads *units* from a source (:mod:`biorag.kg.sources`: ``medmcqa``, ``mirage``,
``jsonl`` or ``text``), keeping the first or second half of them when asked, extracts triplets
(one per QA pair, plus the explanation where known; one per sentence of a text paragraph;
``jsonl`` triplet records are stored as given), adds them to the store (building into an
existing DIR adds to it; duplicates are counted, not stored twice), embeds the entities not
indexed yet, rewrites the review CSV and records the build in ``DIR/build.json`` (the directory
layout: :mod:`biorag.kg.directory`).

Extraction uses the LLM when one is configured, else the rule-based floor (see
:mod:`biorag.kg.extract_triplets`). Every unit that yields no triplet is reported with where it
is (``file:line`` or the question id) and why. With an LLM, ``llm_yield`` counts per stage
(``kg_triplets`` for QA pairs, ``kg_triplets_text`` for sentences) the units asked and those
that gave a usable triplet (:class:`~biorag.llm.stage_yield.StageYield`); a stage where under
20% did is logged as a WARNING.

This module also re-exports the names other code imports from it: the sources
(:mod:`biorag.kg.sources`), the directory helpers (:mod:`biorag.kg.directory`) and
:func:`~biorag.kg.review_import.import_csv`.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from biorag.errors import BioragError
from biorag.kg.directory import (
    BUILD_FILE,
    REVIEW_FILE,
    kg_stats,
    require_kg,
    sync_entity_index,
)
from biorag.kg.entity_index import META, EntityIndex
from biorag.kg.extract_triplets import RULE_MODEL
from biorag.kg.extract_units import (
    CHECKPOINT,
    UNITS_PER_BATCH,
    Extracted,
    batches_of,
    executor_batches,
    extract_units,
    local_batches,
    units_of,
)
from biorag.kg.models import Triplet
from biorag.kg.provenance import PROVENANCE_FILE, record_provenance
from biorag.kg.review import write_review_csv
from biorag.kg.review_import import ImportResult, import_csv
from biorag.kg.sources import (
    FORMATS,
    HALVES,
    Dropped,
    Sources,
    _paragraphs,
    read_sources,
    take_half,
)
from biorag.kg.stores.factory import open_store
from biorag.kg.stores.sqlite_common import FILENAME
from biorag.llm.base import ChatModel
from biorag.llm.stage_yield import StageYield, warn_if_low
from biorag.util.files import write_json_atomic

__all__ = [
    "BUILD_FILE",
    "FORMATS",
    "HALVES",
    "REVIEW_FILE",
    "BuildReport",
    "Dropped",
    "ImportResult",
    "Sources",
    "_paragraphs",
    "build_kg",
    "import_csv",
    "kg_stats",
    "read_sources",
    "require_kg",
    "sync_entity_index",
    "take_half",
]

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


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
    # per LLM stage: inputs, usable, outputs, fallbacks and shares (StageYield.to_dict())
    llm_yield: dict[str, dict[str, Any]] = field(default_factory=dict)
    units_resumed: int = 0  # units whose extraction a killed build had finished
    executor: dict[str, Any] = field(default_factory=dict)  # where extraction ran, per worker

    def dropped_by_reason(self) -> dict[str, int]:
        return dict(Counter(d.reason for d in self.dropped).most_common())

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["dropped_count"] = len(self.dropped)
        d["dropped_by_reason"] = self.dropped_by_reason()
        return d


def _check_out(out: Path, embedder: Any) -> None:
    """Fail early when ``out`` is a file or its entity index uses another embedding model."""
    if out.exists() and not out.is_dir():
        raise BioragError(f"{out} is a file: pass a directory for the knowledge graph", param="out")
    if (out / META).is_file():  # another embedding model: fail before anything is stored
        EntityIndex.open(out, embedder)


def _extract_located(
    src: Sources,
    report: BuildReport,
    out: Path,
    how: _How,
    progress: Progress,
    seconds: dict[str, float],
) -> list[tuple[str, Triplet]]:
    """Extract the triplets (resumably: :mod:`biorag.kg.extract_units`), record yields and
    drops in ``report``; triplets with their place."""
    llm = how.llm
    units = units_of(src.pairs, src.texts)
    if units:
        progress(
            f"extracting triplets from {len(units)} {'QA pairs' if src.pairs else 'paragraphs'} "
            f"({report.extractor}{'' if how.executor is None else ', on ' + how.executor.kind})"
        )
    header = {"checkpoint": 1, "format": report.format, "extractor": report.extractor,
              "use_explanation": how.use_explanation, "batch_size": how.batch_size}  # fmt: skip
    t0 = time.perf_counter()
    concurrency = getattr(llm, "concurrency", None) if llm is not None else None
    if how.executor is not None:
        per_batch = batches_of(how.batch_size, how.executor.settings.batch_size, concurrency)
        run = executor_batches(how.executor, how.worker_settings or {}, how.batch_size,
                               how.use_explanation, per_batch,
                               getattr(llm, "accounting", None))  # fmt: skip
    else:
        per_batch = batches_of(how.batch_size, UNITS_PER_BATCH, concurrency)
        run = local_batches(llm, how.batch_size, how.use_explanation, per_batch)
    try:
        got = extract_units(units, out, header, run)
    finally:
        if how.executor is not None and llm is not None:  # unused here: workers had their own
            asyncio.run(llm.aclose())
    if how.executor is not None:
        report.executor = how.executor.stats()
    seconds["extract"] = time.perf_counter() - t0
    report.units_resumed = got.resumed
    report.stats = dict(got.stats)
    yields = _yields(src, got) if llm is not None else []
    for y in yields:
        warn_if_low(y)
    report.llm_yield = {y.stage: y.to_dict() for y in yields}
    for sid, why in got.dropped:
        report.dropped.append(Dropped(src.where.get(sid, sid), why, sid))
    located = [*src.given, *((src.where.get(t.source_id, t.source_id), t) for t in got.triplets)]
    report.extracted = len(located)
    return located


def _yields(src: Sources, got: Extracted) -> list[StageYield]:
    """Per LLM stage (QA pairs, text sentences), every unit ends as one triplet or one dropped
    entry; with an LLM there is no floor to fall back to (an unusable answer is dropped)."""
    out = []
    pair_ids = {p.id for p in src.pairs}
    for stage, unit, wanted in (
        ("kg_triplets", "QA pairs", True),
        ("kg_triplets_text", "sentences", False),
    ):
        if not (src.pairs if wanted else src.texts):
            continue
        n = sum((t.source_id in pair_ids) == wanted for t in got.triplets)
        lost = sum((sid in pair_ids) == wanted for sid, _ in got.dropped)
        out.append(StageYield(stage, inputs=n + lost, usable=n, outputs=n, unit=unit,
                              output_unit="triplets"))  # fmt: skip
    return out


@dataclass
class _How:
    """How units are extracted: the LLM (None: rules), its options, and a batch executor
    other than local with the settings its workers build from (None: this process)."""

    llm: ChatModel | None
    batch_size: int
    use_explanation: bool
    executor: Any | None = None
    worker_settings: dict[str, Any] | None = None


def _store_located(
    out: Path,
    located: list[tuple[str, Triplet]],
    report: BuildReport,
    embedder: Any,
    progress: Progress,
    seconds: dict[str, float],
) -> Path:
    """Store the triplets, embed new entities and write the review CSV; the CSV's path."""
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
    return csv_path


def _write_build_record(
    out: Path, report: BuildReport, embedder: Any, csv_path: Path, seconds: dict[str, float]
) -> None:
    """Fill in the report's files and timings and write it to ``build.json``."""
    report.files = {
        "store": str(out / FILENAME),
        "entity_index": str(out / META),
        "review_csv": str(csv_path),
        "build": str(out / BUILD_FILE),
        "provenance": str(out / PROVENANCE_FILE),
    }
    report.seconds = {k: round(v, 3) for k, v in seconds.items()}
    record = report.to_dict()
    record["built_at"] = datetime.now(UTC).isoformat(timespec="seconds")
    record["embed_model"] = str(getattr(embedder, "model_id", ""))
    write_json_atomic(out / BUILD_FILE, record)


def build_kg(
    source: str | Path,
    fmt: str,
    out: str | Path,
    *,
    embedder: Any,
    llm: ChatModel | None = None,
    batch_size: int = 1,
    use_explanation: bool = True,
    half: str = "all",
    split: str | None = None,
    limit: int | None = None,
    explanations: str | Path | None = None,
    progress: Progress = _quiet,
    executor: Any | None = None,
    worker_settings: dict[str, Any] | None = None,
) -> BuildReport:
    """Read, extract, store, index entities, write the review CSV and ``build.json``.

    ``executor``: a batch executor other than local extracts on its workers, each building
    the LLM from ``worker_settings`` (:func:`biorag.executor.settings_for_workers`)."""
    if batch_size < 1:
        raise BioragError("batch_size must be at least 1", param="batch_size")
    if executor is not None and executor.kind == "local":
        executor = None
    if executor is not None and worker_settings is None:
        raise ValueError("an executor needs the settings its workers build from")
    out = Path(out)
    _check_out(out, embedder)
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
    how = _How(llm, batch_size, use_explanation, executor, worker_settings)
    located = _extract_located(src, report, out, how, progress, seconds)
    record_provenance(  # before storing: no triplet is ever in the graph without its source
        out,
        src.pairs,
        [*(t.source_id for _, t in src.given), *(sid for sid, _ in src.texts)],
        {"source": str(source), "format": fmt, "half": half, "split": split, "limit": limit},
    )
    csv_path = _store_located(out, located, report, embedder, progress, seconds)
    _write_build_record(out, report, embedder, csv_path, seconds)
    (out / CHECKPOINT).unlink(missing_ok=True)  # built: nothing left to resume
    return report
