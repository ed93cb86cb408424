"""The executor interface, the local executor, and choosing one from the settings."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

from biorag.config import ExecutorSettings


class BatchExecutor(Protocol):
    """Runs ``worker_cls(*args)`` over ``items`` in batches; yields ``(indexes, results)``
    per batch (results: a 2-D array or a list, one row per item), every item exactly once."""

    kind: str
    settings: ExecutorSettings

    def map_batches(
        self, worker_cls: type, args: tuple[Any, ...], items: Sequence[Any], batch_size: int
    ) -> Iterator[tuple[list[int], Any]]: ...

    def stats(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


class LocalExecutor:
    """One worker in this process, batches in order."""

    kind = "local"

    def __init__(self, settings: ExecutorSettings | None = None) -> None:
        self.settings = settings or ExecutorSettings()
        self._rows = 0
        self._secs = 0.0

    def map_batches(
        self, worker_cls: type, args: tuple[Any, ...], items: Sequence[Any], batch_size: int
    ) -> Iterator[tuple[list[int], Any]]:
        worker = worker_cls(*args)
        for start in range(0, len(items), batch_size):
            batch = list(items[start : start + batch_size])
            t = time.perf_counter()
            out = worker(batch)
            self._secs += time.perf_counter() - t
            self._rows += len(batch)
            yield list(range(start, start + len(batch))), out

    def stats(self) -> dict[str, Any]:
        return {"kind": self.kind, "workers": {"local": {"rows": self._rows, "s": self._secs}}}

    def close(self) -> None:
        pass


def build_executor(settings: ExecutorSettings) -> BatchExecutor:
    """The executor ``settings`` name (``ray`` connects to the cluster now)."""
    if settings.kind == "ray":
        # lazy: the Ray executor (optional extra) only when chosen
        from biorag.executor.ray_executor import RayExecutor

        return RayExecutor(settings)
    return LocalExecutor(settings)


# The settings that name files: relative ones are made absolute for workers, whose working
# directory is Ray's, not the driver's.
_PATH_KEYS = (
    ("home",),
    ("llm", "cache_path"),
    ("llm", "hf_path"),
    ("llm", "mock_script"),
    ("judge", "cache_path"),
    ("judge", "hf_path"),
    ("embed", "model"),
    ("rerank", "model"),
)


def settings_for_workers(settings: Any) -> dict[str, Any]:
    """``settings`` (a :class:`~biorag.config.Settings`) as the plain dict a worker rebuilds
    them from, each relative file setting made absolute (``home`` always; the others where the
    file exists here, so a model name stays a name). Secrets are not in it: keys are read from
    the environment variable each section names, on the worker's node."""
    from pathlib import Path

    data: dict[str, Any] = settings.model_dump(mode="json")
    for keys in _PATH_KEYS:
        holder = data
        for k in keys[:-1]:
            holder = holder.get(k) or {}
        value = holder.get(keys[-1])
        if not isinstance(value, str) or not value:
            continue
        p = Path(value).expanduser()
        if not p.is_absolute() and (keys == ("home",) or p.exists()):
            holder[keys[-1]] = str(p.resolve())
    return data
