"""One background worker thread that takes work off a queue in turn: the shape shared by the
service's document jobs and evaluation runs.

``start()`` recovers what a stopped server left (``_recover``, once) and starts the thread, or
starts a new one if the last died; ``stop()`` asks the work in progress to stop
(``stopping`` is set: the work checks it at its next step) and waits for the thread, so what
the work uses is not closed under it. An item whose handling fails even to record its failure
is logged and the worker goes on.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Generic, TypeVar

log = logging.getLogger("biorag.serve")
T = TypeVar("T")


class QueueWorker(Generic[T]):
    """Subclasses set ``thread_name`` and implement ``_attempt(item)`` and ``_recover()``."""

    thread_name = "biorag-worker"

    def __init__(self) -> None:
        self._queue: queue.Queue[T | None] = queue.Queue()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """On the first call, recover and start the worker; later, restart it if it died."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            if self._thread is None:
                self._recover()
            self._thread = threading.Thread(target=self._work, name=self.thread_name, daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 120.0) -> None:
        """Stop the work in progress at its next step and wait for the worker."""
        self._stopping.set()
        self._queue.put(None)
        if self._thread is not None:
            self._thread.join(timeout)

    def _recover(self) -> None:
        """Queue again what a stopped server left unfinished (called under the lock)."""

    def _attempt(self, item: T) -> None:
        raise NotImplementedError

    def _work(self) -> None:
        while (item := self._queue.get()) is not None:
            try:
                self._attempt(item)
            except Exception:  # even its state could not be written: the worker goes on
                log.exception("%s: %s: its state could not be saved", self.thread_name, item)
