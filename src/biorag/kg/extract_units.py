"""A knowledge-graph build's extraction, unit by unit, resumable, here or on a batch executor.

A *unit* is one QA pair or one text paragraph of :class:`~biorag.kg.sources.Sources`. Units are
extracted in batches (in this process with the caller's LLM, or on the workers of an
:mod:`biorag.executor` such as Ray, each building the LLM from the settings once), and each
unit's result, its triplets and its dropped sentences, is appended to
``DIR/extract_checkpoint.jsonl`` as its batch ends. A build killed midway and run again with
the same extractor takes the finished units from there and extracts only the rest; a
successful build deletes the file. Results are put back in unit order whatever order the
batches end in, so a build on Ray stores what a local build stores, in the same order.

The checkpoint's first line names what made it (format, extractor, ``use_explanation``,
``batch_size``); one made otherwise is set aside (``.stale``) rather than mixed in. A unit is
matched by its source id and a hash of its text, so an edited record is extracted again.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from biorag.config import Settings
from biorag.executor.checkpoint import RunBatches, content_hash, on_executor, run_checkpointed
from biorag.kg.extract_triplets import QAPair, extract_qa_triplets, extract_text_triplets
from biorag.kg.models import Triplet
from biorag.llm.accounting import Accounting
from biorag.llm.base import ChatModel
from biorag.llm.shared import SharedLLM

log = logging.getLogger(__name__)

CHECKPOINT = "extract_checkpoint.jsonl"
UNITS_PER_BATCH = 64  # units per batch at most: a batch's results are committed together


@dataclass
class Extracted:
    """Every unit's triplets and dropped reasons, in unit order, and what it took."""

    triplets: list[Triplet] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    stats: Counter[str] = field(default_factory=Counter)
    resumed: int = 0  # units taken from the checkpoint


def units_of(pairs: Sequence[QAPair], texts: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """The units as plain dicts (``sid``, ``hash`` and the pair or the text)."""
    out: list[dict[str, Any]] = []
    for p in pairs:
        body = asdict(p)
        out.append({"sid": p.id, "pair": body, "hash": content_hash(body)})
    for sid, text in texts:
        out.append({"sid": sid, "text": text, "hash": content_hash(text)})
    return out


def _groups(units: Sequence[dict[str, Any]]) -> list[list[int]]:
    """Unit positions in runs where no source id repeats (results are matched back by source
    id: two paragraphs of files of the same name share one), in order; usually one run."""
    groups: list[list[int]] = [[]]
    seen: set[str] = set()
    for i, u in enumerate(units):
        if u["sid"] in seen:
            groups.append([])
            seen = set()
        groups[-1].append(i)
        seen.add(u["sid"])
    return groups


async def extract_batch(
    units: Sequence[dict[str, Any]], llm: ChatModel | None, batch_size: int, use_explanation: bool
) -> list[dict[str, Any]]:
    """One result per unit: ``{"sid", "hash", "triplets": [...], "dropped": [reasons]}``; the
    batch's counters are on the first (``stats``)."""
    results: list[dict[str, Any]] = [{} for _ in units]
    stats: Counter[str] = Counter()
    for group in _groups(units):
        part = [units[i] for i in group]
        pairs = [QAPair(**u["pair"]) for u in part if "pair" in u]
        texts = [(u["sid"], u["text"]) for u in part if "pair" not in u]
        by_sid: dict[str, list[Triplet]] = {u["sid"]: [] for u in part}
        why: dict[str, list[str]] = {u["sid"]: [] for u in part}
        reports = []
        if pairs:
            reports.append(
                await extract_qa_triplets(
                    pairs, llm, batch_size=batch_size, use_explanation=use_explanation
                )
            )
        if texts:
            reports.append(await extract_text_triplets(texts, llm))
        for rep in reports:
            stats.update(rep.stats)
            for t in rep.triplets:
                by_sid[t.source_id].append(t)
            for sid, reason in rep.dropped:
                why[sid].append(reason)
        for i, u in zip(group, part, strict=True):
            results[i] = {
                "sid": u["sid"],
                "hash": u["hash"],
                "triplets": [t.model_dump() for t in by_sid[u["sid"]]],
                "dropped": why[u["sid"]],
            }
    if results:
        results[0]["stats"] = dict(stats)
    return results


class TripletWorker:
    """A batch executor's worker: extracts batches of units (JSON texts) with the LLM the
    settings describe (none: the rules); returns one JSON result per unit, the batch's LLM
    accounting on the first."""

    def __init__(self, settings: dict[str, Any], batch_size: int, use_explanation: bool) -> None:

        self.loop = asyncio.new_event_loop()
        self.shared = SharedLLM(Settings.model_validate({**settings, "executor": {}}))
        self.batch_size, self.use_explanation = batch_size, use_explanation

    def __call__(self, batch: list[str]) -> list[str]:

        acc = Accounting()
        llm = self.shared.client(acc)
        units = [json.loads(x) for x in batch]
        results = self.loop.run_until_complete(
            extract_batch(units, llm, self.batch_size, self.use_explanation)
        )
        if results:
            results[0]["accounting"] = acc.report()
        return [json.dumps(r, ensure_ascii=False) for r in results]


def batches_of(llm_batch: int, executor_batch: int, concurrency: int | None) -> int:
    """Units per batch: :data:`UNITS_PER_BATCH` (or the executor's batch size, if smaller), a
    multiple of the LLM's pairs per call; with an LLM (``concurrency``: its calls in flight)
    at least two calls per slot, so a batch keeps every slot busy."""
    cap = max(1, min(UNITS_PER_BATCH, executor_batch))
    calls = max(1, cap // llm_batch)
    if concurrency is not None:
        calls = max(calls, 2 * concurrency)
    return llm_batch * calls


def extract_units(
    units: list[dict[str, Any]], out: Path, header: dict[str, Any], run_batches: RunBatches
) -> Extracted:
    """Take finished units from ``out``'s checkpoint, extract the others with ``run_batches``
    (which yields each batch's results as it ends), append them to the checkpoint; every
    unit's result gathered in unit order."""
    done, resumed = run_checkpointed(
        units, out / CHECKPOINT, header, run_batches, "extracting triplets"
    )
    got = Extracted(resumed=resumed)
    for u in units:
        rec = done[(u["sid"], u["hash"])]
        got.triplets += [Triplet(**t) for t in rec["triplets"]]
        got.dropped += [(u["sid"], why) for why in rec["dropped"]]
        got.stats.update(rec.get("stats") or {})
    return got


def local_batches(
    llm: ChatModel | None, batch_size: int, use_explanation: bool, per_batch: int
) -> RunBatches:
    """``run_batches`` in this process with the caller's LLM, in one event loop."""

    def run(todo: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
        loop = asyncio.new_event_loop()
        try:
            for start in range(0, len(todo), per_batch):
                chunk = todo[start : start + per_batch]
                yield loop.run_until_complete(
                    extract_batch(chunk, llm, batch_size, use_explanation)
                )
        finally:
            try:
                if llm is not None:
                    loop.run_until_complete(llm.aclose())
            finally:
                loop.close()

    return run


def executor_batches(
    executor: Any,
    settings: dict[str, Any],
    batch_size: int,
    use_explanation: bool,
    per_batch: int,
    accounting: Any | None,
) -> RunBatches:
    """``run_batches`` on ``executor``'s :class:`TripletWorker` s; each batch's LLM accounting
    is merged into ``accounting``."""
    args = (settings, batch_size, use_explanation)
    return on_executor(executor, TripletWorker, args, per_batch, accounting)
