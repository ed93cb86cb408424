"""An evaluation's answering on a batch executor's workers (``executor.kind = "ray"``).

Each Ray actor builds, once, what the runner builds in its own process: a
:class:`~biorag.runtime.Runtime` (embedder, index searcher, reranker, its one shared LLM) from
the run's settings, and one event loop; then it
answers each batch of (method, question) pairs with
:func:`~biorag.eval.run.answering.answer_question`, ``concurrency`` at a time, as the runner would.
The driver appends each batch's prediction records to ``predictions.jsonl`` as the batch
returns, so a killed run resumes, like a local one, with the pairs that have no record.

Workers read the index directories, knowledge graphs and models at the paths the driver names
(made absolute, the methods' options' paths too): on a cluster of several machines those must
be on a filesystem every node mounts, and each node's environment must hold the API keys the
settings name. The LLM cache is each worker's own ``home``; on one machine they share it
(SQLite, WAL). Every actor runs ``concurrency`` answers with its own LLM limit
(``llm.concurrency``), so an endpoint sees up to actors x that many requests: set
``executor.ray_workers`` to what it serves.

Items and records travel as JSON text, so Ray Data never has to infer a schema for them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from biorag.config import Settings
from biorag.corpus.datasets.base import QAItem
from biorag.eval.run.answering import answer_question
from biorag.eval.run.records import PredictionWriter
from biorag.runtime import Runtime

#: pairs per batch for each concurrent answer a worker runs: small batches are committed often
PAIRS_PER_SLOT = 2


class AnswerWorker:
    """Answers batches of ``{"method", "item"}`` JSON texts; returns one JSON record each."""

    def __init__(
        self,
        settings: dict[str, Any],
        index_paths: list[str],
        method_options: dict[str, dict[str, Any]],
        concurrency: int,
        source_docs: str = "exclude",
    ) -> None:
        s = Settings.model_validate({**settings, "executor": {"kind": "local"}})
        self.loop = asyncio.new_event_loop()
        self.base = Runtime(s, [Path(p) for p in index_paths])
        self.options = method_options
        self.concurrency = concurrency
        self.source_docs = source_docs

    def __call__(self, batch: list[str]) -> list[str]:
        return self.loop.run_until_complete(self._answer([json.loads(x) for x in batch]))

    async def _answer(self, pairs: list[dict[str, Any]]) -> list[str]:
        slots = asyncio.Semaphore(self.concurrency)

        async def one(pair: dict[str, Any]) -> str:
            item = QAItem.model_validate(pair["item"])
            async with slots:
                rec = await answer_question(
                    self.base, self.options, pair["method"], item, self.source_docs
                )
            return json.dumps(rec, ensure_ascii=False, default=str)

        return list(await asyncio.gather(*(one(p) for p in pairs)))


async def answer_on_executor(
    pending: list[tuple[str, QAItem]],
    executor: Any,
    worker_args: tuple[dict[str, Any], list[str], dict[str, dict[str, Any]], int, str],
    path: Path,
    on_record: Callable[[dict[str, Any]], bool],
) -> None:
    """Answer ``pending`` on ``executor`` with :class:`AnswerWorker` ``(*worker_args)``,
    appending each record to ``path`` as its batch returns; ``on_record`` sees every record
    and returns True to stop the run (answers so far are kept)."""
    concurrency = worker_args[3]
    items = [
        json.dumps({"method": m, "item": it.model_dump(mode="json")}, ensure_ascii=False)
        for m, it in pending
    ]
    batch = max(1, min(executor.settings.batch_size, concurrency * PAIRS_PER_SLOT))
    batches: Iterator[tuple[list[int], Any]] = executor.map_batches(
        AnswerWorker, worker_args, items, batch
    )
    with PredictionWriter(path) as writer:
        while True:
            got = await asyncio.to_thread(next, batches, None)
            if got is None:
                return
            records = [json.loads(str(text)) for text in got[1]]
            for rec in records:  # the whole batch is kept before anything may stop the run
                writer.append(rec)
            stop = False
            for rec in records:
                stop = on_record(rec) or stop
            if stop:
                return


def absolute_paths(method_options: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The methods' options with each relative path that exists here (a knowledge graph's
    ``kg``) made absolute, as the workers, in another working directory, need them."""
    out: dict[str, dict[str, Any]] = {}
    for method, opts in method_options.items():
        out[method] = {
            k: str(Path(v).resolve())
            if isinstance(v, str) and v and not Path(v).is_absolute() and Path(v).exists()
            else v
            for k, v in opts.items()
        }
    return out
