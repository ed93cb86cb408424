"""Answering one ask for ``biorag serve``: whole (``POST /v1/ask``) or streamed as
Server-Sent Events (``stream: true``).

An ask runs on a child runtime of its own (its own LLM client and accounting) in a task that
holds one ask slot until its work ends, whether or not its client is still there. A streamed
ask sends ``event: stage`` (a method step started, finished or failed, with its seconds), then
``event: token`` (pieces of the answer as the model writes them, where the model server
streams), then ``event: result`` (the whole answer, as ``/v1/ask`` returns it) or
``event: error`` (``{"type", "message"}``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException

from biorag.asking import EventSink, prepare
from biorag.corpus.datasets.base import Question
from biorag.errors import BioragError, LLMError
from biorag.runtime import Runtime
from biorag.serve.metrics import Metrics
from biorag.serve.schemas import AskRequest

log = logging.getLogger("biorag.serve")


class Slots:
    """At most ``n`` asks at once; one more is refused at once (503), not queued."""

    def __init__(self, n: int) -> None:
        self.n, self.busy = n, 0

    def take(self) -> None:
        if self.busy >= self.n:
            raise HTTPException(
                503, f"all {self.n} ask slots are busy; retry shortly", {"Retry-After": "1"}
            )
        self.busy += 1

    def give(self) -> None:
        self.busy -= 1


@dataclass
class Asker:
    """What every ask draws on: the runtime (and its one shared model), the slots, the
    defaults."""

    rt: Runtime
    slots: Slots
    default_method: str
    kg: Any = None  # the served KG directory, for vectorgraphrag
    metrics: Metrics | None = None

    def start(
        self, body: AskRequest, on_event: EventSink | None = None
    ) -> asyncio.Task[dict[str, Any]]:
        """Check the ask (a :class:`BioragError` for a bad one), take a slot (503 when none
        is free) and start answering it through :func:`biorag.asking.ask`'s road;
        ``on_event(kind, data)`` hears its stages and tokens."""
        method = body.method or self.default_method
        options = dict(body.method_options)
        if method == "vectorgraphrag" and self.kg is not None:
            options["kg"] = str(self.kg)  # requests cannot name a KG (SERVER_ONLY_OPTIONS)
        question = Question(text=body.question, options=body.options, type=body.type)
        prepared = prepare(self.rt, question, method, options)
        self.slots.take()
        if self.metrics is not None:
            self.metrics.in_flight.inc()

        async def answer() -> dict[str, Any]:
            return (await prepared.run(on_event)).model_dump()

        task = asyncio.create_task(answer())

        def done(t: asyncio.Task[Any]) -> None:
            self.slots.give()  # when the work ends, not when a client gives up waiting
            if self.metrics is not None:
                self.metrics.in_flight.dec()
                failed = t.cancelled() or t.exception() is not None
                self.metrics.ask(method, "error" if failed else "ok", prepared.accounting.report())
            if not t.cancelled() and t.exception() is not None and getattr(t, "_abandoned", False):
                log.warning("an ask whose client left failed: %s", t.exception())

        task.add_done_callback(done)
        return task

    async def ask(self, body: AskRequest) -> dict[str, Any]:
        """The whole answer of one ask."""
        task = self.start(body)
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task._abandoned = True  # type: ignore[attr-defined]  # its error is logged, not lost
            raise

    def stream(self, body: AskRequest) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Start one ask (raising at once for a bad one or a full server) and return its
        events: ``(kind, data)`` for stage, token, then result or error."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()

        def put(kind: str, data: dict[str, Any]) -> None:  # from the loop or a worker thread
            loop.call_soon_threadsafe(events.put_nowait, (kind, data))

        task = self.start(body, put)
        task.add_done_callback(lambda _: loop.call_soon_threadsafe(events.put_nowait, None))
        return _events(task, events)


async def _events(
    task: asyncio.Task[dict[str, Any]], events: asyncio.Queue[tuple[str, dict[str, Any]] | None]
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    try:
        while (item := await events.get()) is not None:
            yield item
        yield _outcome(task)
    finally:
        if not task.done():
            task._abandoned = True  # type: ignore[attr-defined]  # the client left


def _outcome(task: asyncio.Task[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    error = task.exception()
    if error is None:
        return "result", task.result()
    if isinstance(error, BioragError):
        return "error", {"type": type(error).__name__, "message": " ".join(str(error).split())}
    if isinstance(error, LLMError):
        log.warning("a streamed ask: %s", error)
        message = "the model server failed on this request; retry shortly"
        return "error", {"type": "model_unavailable", "message": message}
    log.error("a streamed ask failed", exc_info=error)
    return "error", {"type": "internal", "message": "the server failed; its log says why"}
