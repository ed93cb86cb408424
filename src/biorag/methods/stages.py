"""Stage events of one answer: which step of a method starts and ends, for a caller that shows
them as they happen (``biorag serve``'s streamed asks).

A method marks its steps with ``with stage("retrieve"):``; nothing is reported unless a caller
listens (:func:`report_stages`), in the same context (the asyncio task and what it starts).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

#: ``listener(event)``: event is ``{"stage", "status": started|finished|failed, "seconds"}``.
StageListener = Callable[[dict[str, Any]], None]
_listener: ContextVar[StageListener | None] = ContextVar("biorag_stage_listener", default=None)


@contextmanager
def report_stages(listener: StageListener) -> Iterator[None]:
    """Inside the block, every :func:`stage` started reports to ``listener``."""
    token = _listener.set(listener)
    try:
        yield
    finally:
        _listener.reset(token)


@contextmanager
def stage(name: str) -> Iterator[None]:
    """One step of a method (retrieve, extract, graph, summarize, rerank, answer...)."""
    listener = _listener.get()
    if listener is None:
        yield
        return
    listener({"stage": name, "status": "started"})
    started = time.perf_counter()
    try:
        yield
    except BaseException:
        listener({"stage": name, "status": "failed", "seconds": _since(started)})
        raise
    listener({"stage": name, "status": "finished", "seconds": _since(started)})


def _since(started: float) -> float:
    return round(time.perf_counter() - started, 3)
