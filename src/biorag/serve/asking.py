"""Answering one ask for ``biorag serve``: whole (``POST /v1/ask``) or streamed as
Server-Sent Events (``stream: true``).

An ask runs on a child runtime of its own (its own LLM client and accounting) in a task that
holds one ask slot (:mod:`biorag.serve.admission`: waiting its turn when all are taken) until
its work ends; a client that hangs up cancels it, which frees the slot at once and cancels the
model request in flight. A streamed
ask sends ``event: stage`` (a method step started, finished or failed, with its seconds), then
``event: token`` (pieces of the answer as the model writes them, where the model server
streams), then ``event: result`` (the whole answer, as ``/v1/ask`` returns it) or
``event: error`` (``{"type", "message"}``).

Each ask's work is capped in time as well as in depth (``k``): past ``max_seconds`` its answer
is cancelled like a hang-up's and the client hears :class:`AskTimedOut` (a 504, or an
``ask_timeout`` error event), so no question, option or slow model holds a slot for longer.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from biorag.asking import EventSink, prepare
from biorag.corpus.datasets.base import Question
from biorag.errors import BioragError, LLMError
from biorag.runtime import Runtime
from biorag.serve.admission import Admission
from biorag.serve.metrics import Metrics
from biorag.serve.schemas import AskRequest

log = logging.getLogger("biorag.serve")


class ClientGone(Exception):
    """The client hung up while its ask waited for a slot: nothing was answered."""


class AskTimedOut(Exception):
    """An ask ran past the server's ``--max-ask-seconds`` and was stopped."""

    def __init__(self, seconds: float) -> None:
        super().__init__(
            f"the ask ran past this server's limit of {seconds:g} s and was stopped; ask with "
            "a smaller k or a cheaper method, or ask the operator to raise --max-ask-seconds"
        )


@dataclass
class Asker:
    """What every ask draws on: the runtime (and its one shared model), the slots, the
    defaults."""

    rt: Runtime
    slots: Admission
    default_method: str
    kg: Any = None  # the served KG directory, for vectorgraphrag
    metrics: Metrics | None = None
    #: the longest one ask may run (seconds); None: no limit
    max_seconds: float | None = 300.0

    async def start(
        self,
        body: AskRequest,
        on_event: EventSink | None = None,
        client: str = "",
        times: dict[str, float] | None = None,
        disconnected: Any = None,
    ) -> asyncio.Task[dict[str, Any]]:
        """Check the ask (a :class:`BioragError` for a bad one), wait for a slot in
        ``client``'s turn (503 when the queue is full or the wait runs out) and start answering
        it through :func:`biorag.asking.ask`'s road; ``on_event(kind, data)`` hears its stages
        and tokens; ``times["queue"]`` gets the seconds it waited for its slot. A client that
        hangs up while its ask waits (``disconnected()`` says so) leaves the queue at once:
        :class:`ClientGone`."""
        method = body.method or self.default_method
        options = dict(body.method_options)
        if method == "vectorgraphrag" and self.kg is not None:
            options["kg"] = str(self.kg)  # requests cannot name a KG (SERVER_ONLY_OPTIONS)
        question = Question(text=body.question, options=body.options, type=body.type)
        prepared = prepare(self.rt, question, method, options)
        waited = time.perf_counter()
        await self._take(client, disconnected)
        if times is not None:
            times["queue"] = time.perf_counter() - waited
        if self.metrics is not None:
            self.metrics.in_flight.inc()

        async def answer() -> dict[str, Any]:
            cap = asyncio.timeout(self.max_seconds)
            try:
                async with cap:
                    return (await prepared.run(on_event)).model_dump()
            except TimeoutError:
                if cap.expired():  # the server's cap, not a timeout inside the method
                    raise AskTimedOut(self.max_seconds or 0) from None
                raise

        task = asyncio.create_task(answer())

        def done(t: asyncio.Task[Any]) -> None:
            self.slots.give()  # when the work ends or its client left (cancelled)
            if self.metrics is not None:
                self.metrics.in_flight.dec()
                status = "cancelled" if t.cancelled() else "error" if t.exception() else "ok"
                self.metrics.ask(method, status, prepared.accounting.report())

        task.add_done_callback(done)
        return task

    async def _take(self, client: str, disconnected: Any) -> None:
        """A slot in ``client``'s turn, or :class:`ClientGone` as soon as it hangs up."""
        if disconnected is None:
            await self.slots.take(client)
            return
        take = asyncio.create_task(self.slots.take(client))
        watch = asyncio.create_task(_hangup(disconnected))
        try:
            await asyncio.wait({take, watch}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
            if not take.done():  # the client left, or the request itself was cancelled
                take.cancel()  # out of the queue; a slot handed to it goes on in turn
        await asyncio.wait({take})
        if take.cancelled():
            raise ClientGone
        take.result()  # a 503 (full, or the wait ran out) is raised here

    async def ask(
        self,
        body: AskRequest,
        client: str = "",
        disconnected: Any = None,
        times: dict[str, float] | None = None,
    ) -> dict[str, Any]:
        """The whole answer of one ask; ``disconnected()`` (awaitable: the request's) tells
        when its client hung up, which cancels the answer. ``times`` gets ``queue`` (seconds
        waiting for a slot) and ``answer`` (seconds answering)."""
        times = {} if times is None else times
        task = await self.start(body, client=client, times=times, disconnected=disconnected)
        started = time.perf_counter()
        watch = asyncio.create_task(_hangup(disconnected)) if disconnected else None
        try:
            if watch is not None:
                await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
                if not task.done():
                    task.cancel()  # the client left: its slot and model request go now
                    raise asyncio.CancelledError
            result = await asyncio.shield(task)
            times["answer"] = time.perf_counter() - started
            return result
        except asyncio.CancelledError:
            task.cancel()
            raise
        finally:
            if watch is not None:
                watch.cancel()

    async def stream(
        self,
        body: AskRequest,
        client: str = "",
        times: dict[str, float] | None = None,
        disconnected: Any = None,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """Start one ask (raising at once for a bad one or a full queue) and return its
        events: ``(kind, data)`` for stage, token, then result or error."""
        loop = asyncio.get_running_loop()
        events: asyncio.Queue[tuple[str, dict[str, Any]] | None] = asyncio.Queue()

        def put(kind: str, data: dict[str, Any]) -> None:  # from the loop or a worker thread
            loop.call_soon_threadsafe(events.put_nowait, (kind, data))

        task = await self.start(body, put, client, times, disconnected)
        task.add_done_callback(lambda _: loop.call_soon_threadsafe(events.put_nowait, None))
        return _events(task, events)


def server_timing(times: dict[str, float]) -> str:
    """The ``Server-Timing`` header of an ask (``queue;dur=12.3, answer;dur=45.6``, in
    milliseconds): what a client, a browser's network panel or a load test reads to tell
    waiting for a slot from answering."""
    return ", ".join(f"{name};dur={seconds * 1000:.1f}" for name, seconds in times.items())


async def _hangup(disconnected: Any) -> None:
    """Returns when the client has gone (polled, as Starlette offers it)."""
    while not await disconnected():
        await asyncio.sleep(0.2)


async def _events(
    task: asyncio.Task[dict[str, Any]], events: asyncio.Queue[tuple[str, dict[str, Any]] | None]
) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    try:
        while (item := await events.get()) is not None:
            yield item
        yield _outcome(task)
    finally:
        if not task.done():
            task.cancel()  # the client left: its slot and model request go now


def _outcome(task: asyncio.Task[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    if task.cancelled():  # the server is stopping
        return "error", {"type": "cancelled", "message": "the ask was stopped; ask again"}
    error = task.exception()
    if error is None:
        return "result", task.result()
    if isinstance(error, AskTimedOut):
        return "error", {"type": "ask_timeout", "message": str(error)}
    if isinstance(error, BioragError):
        return "error", {"type": type(error).__name__, "message": " ".join(str(error).split())}
    if isinstance(error, LLMError):
        log.warning("a streamed ask: %s", error)
        message = "the model server failed on this request; retry shortly"
        return "error", {"type": "model_unavailable", "message": message}
    log.error("a streamed ask failed", exc_info=error)
    return "error", {"type": "internal", "message": "the server failed; its log says why"}
