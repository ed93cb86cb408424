"""An on-disk embedding cache and an embedder wrapper that only computes what is missing.

Storage: one SQLite file (WAL journal) with a row per ``(model_id, sha256(text))`` holding the
vector as a float32 blob, in a rowid table with a unique index (reading 30k 384-d vectors takes
about 0.15 s, 3x faster than a WITHOUT ROWID table, whose rows are too big for its pages).
Each batch of new vectors is committed on its own, so an interrupted run keeps everything
embedded before the interruption; readers in other processes are never blocked by a writer.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from biorag.embed.base import Embedder, empty

DB_NAME = "embeddings.sqlite"
_IN_CHUNK = 500  # keys per SELECT ... IN (...)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model_id TEXT NOT NULL,
    text_sha256 BLOB NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    UNIQUE (model_id, text_sha256)
)
"""


def text_key(text: str) -> bytes:
    """The cache key of a text: its UTF-8 SHA-256 digest (32 bytes)."""
    return hashlib.sha256(text.encode("utf-8")).digest()


class EmbeddingCache:
    """Vectors keyed by ``(model_id, text key)`` in ``<cache_dir>/embeddings.sqlite``."""

    def __init__(self, cache_dir: str | Path):
        self.path = Path(cache_dir) / DB_NAME
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False)
        with self._lock:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute("PRAGMA synchronous=NORMAL")
            self._conn.execute(_SCHEMA)
            self._conn.commit()

    def get_many(
        self, model_id: str, keys: Sequence[bytes], dim: int | None = None
    ) -> dict[bytes, np.ndarray]:
        """The cached vectors among ``keys`` (rows whose dimension is not ``dim`` skipped)."""
        found: dict[bytes, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), _IN_CHUNK):
                chunk = list(keys[start : start + _IN_CHUNK])
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    "SELECT text_sha256, dim, vector FROM embeddings "
                    f"WHERE model_id = ? AND text_sha256 IN ({marks})",
                    [model_id, *chunk],
                )
                for key, row_dim, blob in rows:
                    if dim is None or row_dim == dim:
                        found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, model_id: str, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Store ``vectors[i]`` under ``keys[i]`` (replacing any old row) and commit."""
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        rows: Iterable[tuple[str, bytes, int, bytes]] = (
            (model_id, k, int(x.shape[1]), x[i].tobytes()) for i, k in enumerate(keys)
        )
        with self._lock:
            self._conn.executemany(
                "INSERT OR REPLACE INTO embeddings (model_id, text_sha256, dim, vector) "
                "VALUES (?, ?, ?, ?)",
                rows,
            )
            self._conn.commit()

    def count(self, model_id: str | None = None) -> int:
        """Number of cached vectors (of one model, or all)."""
        with self._lock:
            if model_id is None:
                return int(self._conn.execute("SELECT COUNT(*) FROM embeddings").fetchone()[0])
            return int(
                self._conn.execute(
                    "SELECT COUNT(*) FROM embeddings WHERE model_id = ?", (model_id,)
                ).fetchone()[0]
            )

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()


class CachedEmbedder:
    """An :class:`~biorag.embed.base.Embedder` that answers from an :class:`EmbeddingCache` and
    asks ``inner`` only for texts it has not seen (each distinct text once), committing every
    ``commit_every`` new vectors. ``hits`` and ``misses`` count texts served and computed."""

    def __init__(self, inner: Embedder, cache_dir: str | Path, *, commit_every: int = 1024):
        self.inner = inner
        self.model_id = inner.model_id
        self.cache = EmbeddingCache(cache_dir)
        self.commit_every = max(1, commit_every)
        self.hits = 0
        self.misses = 0

    @property
    def dim(self) -> int:
        """The inner embedder's dimension."""
        return self.inner.dim

    def embed(
        self, texts: list[str], *, batch_size: int | None = None, show_progress: bool = False
    ) -> np.ndarray:
        """Vectors for ``texts`` (cached ones read, missing ones computed and stored)."""
        if not texts:
            return empty(self.dim)
        keys = [text_key(t) for t in texts]
        first: dict[bytes, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        unique = list(first)
        found = self.cache.get_many(self.model_id, unique)
        missing = [k for k in unique if k not in found]
        self.hits += len(texts) - len(missing)
        self._compute(missing, texts, first, found, batch_size, show_progress)
        if len({v.shape[0] for v in found.values()}) > 1:
            # Rows of an older model stored under the same id: recompute them.
            want = self.dim
            stale = [k for k, v in found.items() if v.shape[0] != want]
            self._compute(stale, texts, first, found, batch_size, show_progress)
        dim = found[keys[0]].shape[0]
        out = np.empty((len(texts), dim), dtype=np.float32)
        for i, k in enumerate(keys):
            out[i] = found[k]
        return out

    def _compute(
        self,
        keys: list[bytes],
        texts: list[str],
        first: dict[bytes, int],
        found: dict[bytes, np.ndarray],
        batch_size: int | None,
        show_progress: bool,
    ) -> None:
        self.misses += len(keys)
        for start in range(0, len(keys), self.commit_every):
            chunk = keys[start : start + self.commit_every]
            vectors = self.inner.embed(
                [texts[first[k]] for k in chunk], batch_size=batch_size, show_progress=show_progress
            )
            self.cache.put_many(self.model_id, chunk, vectors)
            found.update(zip(chunk, vectors, strict=True))

    def embed_query(self, text: str) -> np.ndarray:
        """The vector of one query (cached like any text)."""
        return self.embed([text])[0]

    def close(self) -> None:
        """Close the cache database."""
        self.cache.close()

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, cache={str(self.cache.path)!r})"
