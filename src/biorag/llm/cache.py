"""A SQLite cache of LLM answers (stdlib ``sqlite3``, WAL mode).

The key is the SHA-256 of a canonical JSON of everything that determines an answer: the cache
format version, backend name, model, messages, max_tokens, temperature, stop, json_schema,
logprobs, top_logprobs and the prompt template version. Never an API key or a base URL. The
model is the backend's ``cache_identity()`` where it has one (an in-process model: its name,
a fingerprint of its directory's content and its load precision, see
:class:`~biorag.llm.middleware.CacheMiddleware`), else its ``model``; the ``model`` column of
a row keeps the readable name the response showed.
One connection is shared under a lock; calls from asyncio code run in a worker thread.
Several processes may share the file (WAL + busy timeout).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from biorag.llm.types import ChatRequest, ChatResponse

CACHE_FORMAT_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_cache (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    stage TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""

# Fields of a response that are stored; parsed/parse_error are recomputed on a hit.
_STORED = (
    "text",
    "prompt_tokens",
    "completion_tokens",
    "logprobs",
    "model",
    "finish_reason",
    "reasoning",
)


def cache_key(backend: str, model: str, req: ChatRequest) -> str:
    """SHA-256 hex of the canonical JSON of what determines the answer to ``req``; ``model``
    is the model's cache identity (see the module docstring)."""
    payload = {
        "v": CACHE_FORMAT_VERSION,
        "backend": backend,
        "model": model,
        "messages": req.messages,
        "max_tokens": req.max_tokens,
        "temperature": req.temperature,
        "stop": req.stop,
        "json_schema": req.json_schema,
        "logprobs": req.logprobs,
        "top_logprobs": req.top_logprobs,
        "template_version": req.template_version,
    }
    canon = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


class SQLiteCache:
    """Get/put of responses by key; sync methods plus ``aget``/``aput`` for asyncio code."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = sqlite3.connect(
            str(self.path), check_same_thread=False, timeout=30.0, isolation_level=None
        )
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)

    def __repr__(self) -> str:
        return f"SQLiteCache({str(self.path)!r})"

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError(f"LLM cache {self.path} is closed")
        return self._conn

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored response fields for ``key``, or None."""
        with self._lock:
            row = (
                self._connection()
                .execute("SELECT response FROM llm_cache WHERE key = ?", (key,))
                .fetchone()
            )
        return json.loads(row[0]) if row else None

    def put(self, key: str, backend: str, stage: str, resp: ChatResponse) -> None:
        """Store a (successful) response under ``key``."""
        data = resp.model_dump(include=set(_STORED))
        blob = json.dumps(data, ensure_ascii=False)
        with self._lock:
            self._connection().execute(
                "INSERT OR REPLACE INTO llm_cache (key, backend, model, stage, response, created)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (key, backend, resp.model, stage, blob, time.time()),
            )

    async def aget(self, key: str) -> dict[str, Any] | None:
        """:meth:`get` in a worker thread."""
        return await asyncio.to_thread(self.get, key)

    async def aput(self, key: str, backend: str, stage: str, resp: ChatResponse) -> None:
        """:meth:`put` in a worker thread."""
        await asyncio.to_thread(self.put, key, backend, stage, resp)

    def __len__(self) -> int:
        with self._lock:
            return int(self._connection().execute("SELECT COUNT(*) FROM llm_cache").fetchone()[0])

    def clear(self) -> None:
        """Delete every cached answer."""
        with self._lock:
            self._connection().execute("DELETE FROM llm_cache")

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
