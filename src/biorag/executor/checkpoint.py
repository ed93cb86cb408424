"""Batch work whose results are committed unit by unit to a JSON-lines checkpoint, so a run
killed midway and started again does only the units it had not finished.

A unit is a dict with a ``sid`` (its source id) and a ``hash`` of its content; a result is a
dict with the same two keys. The checkpoint is an append-only log (:mod:`biorag.util.jsonl_log`:
whole lines, fsynced a batch at a time, one writer at a time). Its first line names what made
it (the caller's ``header``: extractor, options); a checkpoint made otherwise is set aside as
``.stale`` rather than mixed in. A torn last line (a kill mid-write) is cut off: its unit is
done again. The caller deletes the checkpoint once the work's results are stored.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from biorag.errors import BioragError
from biorag.util.jsonl_log import RecordWriter, read_jsonl_records
from biorag.util.progress import progress_bar

log = logging.getLogger(__name__)

Key = tuple[str, str]
RunBatches = Callable[[list[dict[str, Any]]], Iterator[list[dict[str, Any]]]]


def content_hash(body: Any) -> str:
    """A short hash of a unit's content (JSON, keys sorted)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def read_checkpoint(path: Path, header: dict[str, Any]) -> dict[Key, dict[str, Any]]:
    """The finished units of ``path`` made as ``header`` says, by ``(sid, hash)``; a torn last
    line is cut off (:func:`~biorag.util.jsonl_log.read_jsonl_records`), a checkpoint made
    otherwise set aside."""
    records = read_jsonl_records(
        path, (), what="a checkpoint line", redo="its unit is done again", repair=True
    )
    if records and records[0] != header:
        stale = path.with_name(path.name + ".stale")
        path.replace(stale)
        log.warning("%s was made by another run (%s); set aside as %s", path, records[0], stale)
        return {}
    done: dict[Key, dict[str, Any]] = {}
    for rec in records[1:]:
        if "sid" not in rec or "hash" not in rec:
            raise BioragError(
                f"{path} holds a line without a unit's sid and hash; the file was edited: "
                "delete it to extract everything again"
            )
        done[(rec["sid"], rec["hash"])] = rec
    return done


def run_checkpointed(
    units: list[dict[str, Any]],
    path: Path,
    header: dict[str, Any],
    run_batches: RunBatches,
    what: str,
) -> tuple[dict[Key, dict[str, Any]], int]:
    """Every unit's result (taken from the checkpoint at ``path``, or from ``run_batches`` on
    the units left, each batch appended as it ends, under the log's lock) and how many came
    from the checkpoint. ``run_batches`` is called even with nothing left (so it can release
    what it holds)."""
    done = read_checkpoint(path, header)
    todo = [u for u in units if (u["sid"], u["hash"]) not in done]
    resumed = len(units) - len(todo)
    if resumed:
        log.info("%d of %d units already done (%s)", resumed, len(units), path)
    writer: RecordWriter | None = None
    bar = progress_bar(len(todo), what, unit="unit")
    try:
        for results in run_batches(todo):
            lines = list(results)
            if writer is None:
                fresh = not path.is_file() or path.stat().st_size == 0
                writer = RecordWriter(path)
                if fresh:
                    lines.insert(0, header)
            writer.append_many(lines)
            for rec in results:
                done[(rec["sid"], rec["hash"])] = rec
            bar.update(len(results))
    finally:
        bar.close()
        if writer is not None:
            writer.close()
    return done, resumed


def on_executor(
    executor: Any,
    worker_cls: type,
    args: tuple[Any, ...],
    per_batch: int,
    accounting: Any | None,
) -> RunBatches:
    """``run_batches`` on ``executor``: units sent as JSON text to ``worker_cls(*args)``, which
    returns one JSON result per unit (the batch's LLM accounting report under ``accounting``
    on any of them, merged into ``accounting``)."""

    def run(todo: list[dict[str, Any]]) -> Iterator[list[dict[str, Any]]]:
        items = [json.dumps(u, ensure_ascii=False) for u in todo]
        for _, texts in executor.map_batches(worker_cls, args, items, per_batch):
            results = [json.loads(str(t)) for t in texts]
            for r in results:
                report = r.pop("accounting", None)
                if report and accounting is not None:
                    accounting.merge(report)
            yield results

    return run


def stats_since(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """What an executor's ``stats()`` counted between two readings (its counts add up over
    its runs): each worker's rows and busy seconds since ``before``."""
    was = before.get("workers") or {}
    workers = {}
    for name, now in (after.get("workers") or {}).items():
        old = was.get(name) or {}
        rows = now.get("rows", 0) - old.get("rows", 0)
        if rows:
            secs = round(now.get("s", 0.0) - old.get("s", 0.0), 3)
            workers[name] = {"rows": rows, "s": secs}
    return {"kind": after.get("kind"), "workers": workers}
