"""Progress and logging, always on stderr so stdout stays clean for results and JSON.

On a terminal, progress is a tqdm bar. When stderr is not a terminal (CI, ``nohup``, a service,
a pipe) a bar would be noise, so progress becomes a log line every ``BIORAG_PROGRESS_INTERVAL``
seconds (default 30) and one at the end of any step that took longer than that.
``BIORAG_PROGRESS=0`` turns both off.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")

log = logging.getLogger("biorag")
progress_log = logging.getLogger("biorag.progress")
DEFAULT_INTERVAL_S = 30.0


def progress_enabled() -> bool:
    """Whether progress is shown at all (``BIORAG_PROGRESS`` is not ``0``)."""
    return os.environ.get("BIORAG_PROGRESS", "1") != "0"


def _on_terminal() -> bool:
    return sys.stderr.isatty()


def _interval_s() -> float:
    try:
        return max(0.0, float(os.environ.get("BIORAG_PROGRESS_INTERVAL", DEFAULT_INTERVAL_S)))
    except ValueError:
        return DEFAULT_INTERVAL_S


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class LogProgress:
    """A progress bar's interface (``update``, ``close``) that writes log lines instead."""

    def __init__(self, total: int | None, desc: str, unit: str, interval_s: float) -> None:
        self.total, self.desc, self.unit, self.interval_s = total, desc, unit, interval_s
        self.n = 0
        self.start = self.last = time.monotonic()
        self.closed = False

    def line(self, now: float) -> str:
        elapsed = max(now - self.start, 1e-9)
        rate = self.n / elapsed
        done = f"{self.n}/{self.total}" if self.total else str(self.n)
        text = f"{self.desc}: {done} {self.unit}"
        if self.total:
            text += f" ({100 * self.n / self.total:.0f}%)"
        text += f", {rate:.2f} {self.unit}/s, {_duration(elapsed)} elapsed"
        if self.total and rate > 0 and self.n < self.total:
            text += f", ~{_duration((self.total - self.n) / rate)} left"
        return text

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self.last >= self.interval_s:
            self.last = now
            progress_log.info("%s", self.line(now))

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        now = time.monotonic()
        if now - self.start >= self.interval_s and self.n:
            progress_log.info("%s (done)", self.line(now))

    def __enter__(self) -> LogProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _NoProgress:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass


#: ``callback(desc, done, total)`` per bar update, for the bars of one thread
#: (:func:`observe_progress`): a service's background job reports its steps through it.
ProgressCallback = Callable[[str, int, "int | None"], None]
_observers = threading.local()


@contextlib.contextmanager
def observe_progress(callback: ProgressCallback) -> Iterator[None]:
    """Within the block, every bar this thread opens also reports to ``callback`` (at its
    start, on each update and at its end), whether or not progress is shown. A callback may
    raise to stop the work at its next step."""
    previous = getattr(_observers, "callback", None)
    _observers.callback = callback
    try:
        yield
    finally:
        _observers.callback = previous


class _Observed:
    """A bar that also tells a :func:`observe_progress` callback how far it got."""

    def __init__(self, bar: Any, callback: ProgressCallback, desc: str, total: int | None):
        self.bar, self.callback, self.desc, self.total, self.n = bar, callback, desc, total, 0
        callback(desc, 0, total)

    def update(self, n: int = 1) -> None:
        self.bar.update(n)
        self.n += n
        self.callback(self.desc, self.n, self.total)

    def close(self) -> None:
        self.bar.close()


def progress_bar(total: int | None, desc: str, unit: str = "it") -> Any:
    """A bar with ``.update(n)`` and ``.close()``: tqdm on a terminal, log lines elsewhere."""
    if not progress_enabled():
        bar: Any = _NoProgress()
    elif _on_terminal():
        bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr)
    else:
        bar = LogProgress(total, desc, unit, _interval_s())
    callback = getattr(_observers, "callback", None)
    return bar if callback is None else _Observed(bar, callback, desc, total)


def progress(it: Iterable[T], desc: str, total: int | None = None, unit: str = "it") -> Iterator[T]:
    """Iterate ``it`` with a :func:`progress_bar` (``total`` taken from ``len(it)`` when it has
    one)."""
    if total is None and hasattr(it, "__len__"):
        total = len(it)  # type: ignore[arg-type]
    bar = progress_bar(total, desc, unit)
    try:
        for x in it:
            yield x
            bar.update(1)
    finally:
        bar.close()


class _CurrentStderr(logging.StreamHandler):
    """A handler writing to ``sys.stderr`` as it is when a record is emitted, not as it was
    when logging was set up: a server thread that outlives a replaced (and closed) stderr
    still logs instead of failing with "I/O operation on closed file"."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, _value: Any) -> None:  # StreamHandler.__init__ assigns one
        pass


def setup_logging(verbose: bool = False) -> None:
    level = logging.DEBUG if verbose else logging.INFO
    handler = _CurrentStderr()
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("biorag")
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx", "sentence_transformers", "transformers", "faiss", "bm25s"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
