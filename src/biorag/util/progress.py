"""Progress bars and logging, always on stderr so stdout stays clean for results and JSON."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")

log = logging.getLogger("biorag")


def progress_enabled() -> bool:
    return os.environ.get("BIORAG_PROGRESS", "1") != "0" and sys.stderr.isatty()


def progress(it: Iterable[T], desc: str, total: int | None = None, unit: str = "it") -> Iterator[T]:
    """Wrap an iterable in a tqdm bar on stderr (hidden when stderr is not a terminal)."""
    yield from tqdm(
        it, desc=desc, total=total, unit=unit, file=sys.stderr, disable=not progress_enabled()
    )


def progress_bar(total: int, desc: str, unit: str = "it") -> tqdm:
    """A manual tqdm bar on stderr; call ``.update(n)`` and ``.close()``."""
    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, disable=not progress_enabled())


def setup_logging(verbose: bool = False) -> None:
    level = logging.DEBUG if verbose else logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("biorag")
    root.handlers[:] = [handler]
    root.setLevel(level)
    for noisy in ("httpx", "sentence_transformers", "transformers", "faiss", "bm25s"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
