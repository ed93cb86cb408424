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
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import HTTPException

from biorag.errors import BioragError, LLMError
from biorag.llm.accounting import Accounting
from biorag.llm.shared import SharedLLM
from biorag.llm.stream_sink import stream_answers_to
from biorag.methods.runtime import Runtime
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
    """What every ask draws on: the runtime, the model connection, the slots, the defaults."""

    rt: Runtime
    shared: SharedLLM
    slots: Slots
    default_method: str
    kg: Any = None  # the served KG directory, for vectorgraphrag
    metrics: Metrics | None = None

    def start(
        self, body: AskRequest, on_event: Callable[[str, dict[str, Any]], None] | None = None
    ) -> asyncio.Task[dict[str, Any]]:
        """Check the ask (a :class:`BioragError` for a bad one), take a slot (503 when none
        is free) and start answering; ``on_event(kind, data)`` hears its stages and tokens."""
        from biorag.corpus.datasets.base import Question
        from biorag.methods.registry import build_method

        method = body.method or self.default_method
        options = dict(body.method_options)
        if method == "vectorgraphrag" and self.kg is not None:
            options["kg"] = str(self.kg)  # requests cannot name a KG (SERVER_ONLY_OPTIONS)
        acc = Accounting()
        child = self.rt.for_question(self.shared.client(acc))
        try:
            qa = build_method(method, child, options)
        except (TypeError, ValueError) as e:  # an option of the wrong type for the method
            raise BioragError(f"method options for {method}: {e}") from None
        if qa.needs_index and not self.rt.index_paths:
            raise BioragError(f"method {method!r} retrieves evidence; this server has no index")
        question = Question(text=body.question, options=body.options, type=body.type)
        self.slots.take()
        if self.metrics is not None:
            self.metrics.in_flight.inc()

        async def answer() -> dict[str, Any]:
            with acc.run(), _listening(on_event):
                result = await qa.answer(question)
            return {**result.model_dump(), "accounting": acc.report()}

        task = asyncio.create_task(answer())

        def done(t: asyncio.Task[Any]) -> None:
            self.slots.give()  # when the work ends, not when a client gives up waiting
            if self.metrics is not None:
                self.metrics.in_flight.dec()
                failed = t.cancelled() or t.exception() is not None
                self.metrics.ask(method, "error" if failed else "ok", acc.report())
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


class _listening:
    """Route a method's stage events and streamed answer text to ``on_event``."""

    def __init__(self, on_event: Callable[[str, dict[str, Any]], None] | None) -> None:
        self.on_event = on_event
        self.stack: Any = None

    def __enter__(self) -> None:
        if self.on_event is None:
            return
        from contextlib import ExitStack

        from biorag.methods.stages import report_stages

        on_event = self.on_event
        self.stack = ExitStack()
        self.stack.enter_context(report_stages(lambda e: on_event("stage", e)))
        self.stack.enter_context(stream_answers_to(lambda t: on_event("token", {"text": t})))

    def __exit__(self, *exc: object) -> None:
        if self.stack is not None:
            self.stack.close()
