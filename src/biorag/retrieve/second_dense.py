"""A second dense encoder over an index's chunks, fused with the first
(``retrieval.second_encoder``).

The index keeps its own encoder's vectors in its segments; the second encoder's live beside them
in ``DIR/second_dense/<model>/`` (a FAISS index over every live chunk and the key of the chunks
it was built from). It is built on the first search that needs it and built again when the
index's chunks changed; the embeddings go through the embedding cache, so a rebuild after an add
embeds only what was added. Hits of chunks removed since are passed over by the searcher.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from pathlib import Path
from typing import Any

import numpy as np

from biorag.corpus.store import CorpusStore
from biorag.errors import IndexMismatchError
from biorag.retrieve.dense import DenseIndex
from biorag.retrieve.hits import Hit
from biorag.util.files import write_json_atomic

log = logging.getLogger(__name__)
DIR = "second_dense"


def _slug(model_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model_id).strip("_")[:80] or "model"


class SecondDense:
    """Dense search with a second encoder over index ``path``'s chunks (built when needed)."""

    def __init__(self, path: Path, embedder: Any, key: str, kind: str, hnsw_min_size: int):
        self.path = Path(path)
        self.embedder = embedder
        self.key = key
        self.kind = kind
        self.hnsw_min_size = hnsw_min_size
        self.folder = self.path / DIR / _slug(embedder.model_id)
        self._dense: DenseIndex | None = None
        self._lock = threading.Lock()

    def _stored_key(self) -> str | None:
        meta = self.folder / "built_from.json"
        try:
            data = json.loads(meta.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        ok = data.get("model") == self.embedder.model_id
        return str(data.get("key")) if ok else None

    def _build(self) -> DenseIndex:
        store = CorpusStore(self.path / "corpus.sqlite")
        try:
            ids, texts = store.all_chunk_texts()
        finally:
            store.close()
        log.info(
            "embedding %d chunks of %s with the second encoder %s (once per change of the index)",
            len(ids), self.path, self.embedder.model_id,
        )  # fmt: skip
        vectors = (
            self.embedder.embed(texts, show_progress=True)
            if texts
            else np.zeros((0, self.embedder.dim), np.float32)
        )
        dense = DenseIndex.build(ids, vectors, self.kind, self.hnsw_min_size)  # type: ignore[arg-type]
        try:
            dense.save(self.folder / "dense")
            write_json_atomic(
                self.folder / "built_from.json", {"model": self.embedder.model_id, "key": self.key}
            )
        except OSError as e:  # a read-only index: searched from memory, built again next time
            log.warning("could not keep the second encoder's vectors in %s (%s)", self.folder, e)
        return dense

    def dense(self) -> DenseIndex:
        with self._lock:
            if self._dense is None:
                if self._stored_key() == self.key:
                    try:
                        self._dense = DenseIndex.load(
                            self.folder / "dense", expected_dim=self.embedder.dim
                        )
                    except IndexMismatchError:
                        self._dense = None
                if self._dense is None:
                    self._dense = self._build()
            return self._dense

    def search(self, queries: list[str], depth: int) -> list[list[Hit]]:
        dense = self.dense()
        return dense.search(self.embedder.embed(queries), depth)
