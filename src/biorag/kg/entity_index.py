"""The entity vector index of a VectorGraphRAG knowledge graph (seed 004, Sec. 3.2-3.3).

Every entity name is embedded once with the configured embedder and kept in the KG directory:

```
DIR/entities.npy     float32 unit vectors, one row per name
DIR/entities.json    {"format", "model_id", "dim", "names"}: the names in row order
DIR/entities.faiss   a flat inner-product FAISS index over the rows (cosine on unit vectors)
```

``sync(names)`` embeds only the names not indexed yet and appends them (the FAISS index is
extended, not rebuilt); the JSON file is written last, so a crash between the files leaves the
previous consistent state readable (extra rows are ignored, a stale FAISS file is rebuilt from
the vectors). Opening the directory with another embedding model or dimension is an
:class:`~biorag.errors.IndexMismatchError`. ``search(terms, k, min_sim)`` returns, per term, the
``k`` nearest entities with cosine above ``min_sim`` (the paper: top 10, > 0.9).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from biorag.embed.base import l2_normalize
from biorag.embed.windows import mismatch_hint
from biorag.errors import IndexMismatchError, reading
from biorag.kg.models import normalize_key
from biorag.util.files import write_json_atomic

__all__ = ["EntityIndex"]

FORMAT = "biorag-kg-entities/1"
VECTORS, META, FAISS = "entities.npy", "entities.json", "entities.faiss"


def _faiss() -> Any:
    import faiss

    return faiss


class EntityIndex:
    """Entity names, their unit vectors and a FAISS inner-product index, kept in ``directory``.

    Use :meth:`open` (loads what is there, or starts empty) and :meth:`sync` (adds new names).
    """

    def __init__(self, directory: str | Path, embedder: Any):
        self.dir = Path(directory)
        self.embedder = embedder
        self.model_id = str(embedder.model_id)
        self.dim = int(embedder.dim)
        self.names: list[str] = []
        self.vectors = np.zeros((0, self.dim), dtype=np.float32)
        self.index = _faiss().IndexFlatIP(self.dim)
        self._by_key: dict[str, str] = {}

    @classmethod
    def open(cls, directory: str | Path, embedder: Any) -> EntityIndex:
        """The index saved in ``directory`` (empty when there is none yet)."""
        idx = cls(directory, embedder)
        meta_path = idx.dir / META
        if meta_path.is_file():
            fix = f"delete {idx.dir}/entities.* and it is rebuilt when the graph is next opened"
            with reading(meta_path, "the knowledge graph's entity index", fix):
                meta = json.loads(meta_path.read_text(encoding="utf-8"))
                meta["model_id"], meta["dim"], meta["names"]
            with reading(f"{idx.dir}/entities.*", "the knowledge graph's entity vectors", fix):
                idx._load(meta)
        return idx

    def _load(self, meta: dict[str, Any]) -> None:
        if meta.get("model_id") != self.model_id or int(meta.get("dim", -1)) != self.dim:
            raise IndexMismatchError(
                f"the entity index in {self.dir} was built with {meta.get('model_id')!r} "
                f"(dim {meta.get('dim')}), but the configured embedder is {self.model_id!r} "
                f"(dim {self.dim}): configure that embed.model, or delete "
                f"{self.dir / 'entities.*'} to rebuild the index."
                + mismatch_hint(str(meta.get("model_id")), self.model_id)
            )
        names = [str(n) for n in meta.get("names", [])]
        vpath = self.dir / VECTORS
        vectors = np.load(vpath) if vpath.is_file() else np.zeros((0, self.dim), np.float32)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            vectors = np.zeros((0, self.dim), np.float32)
        vectors = np.ascontiguousarray(vectors[: len(names)], dtype=np.float32)
        if len(vectors) < len(names):  # rows lost in a crash: embed them again
            vectors = np.vstack([vectors, self._embed(names[len(vectors) :])])
        self.names, self.vectors = names, vectors
        self._by_key = {}
        for n in names:
            self._by_key.setdefault(normalize_key(n), n)
        fpath = self.dir / FAISS
        index = _faiss().read_index(str(fpath)) if fpath.is_file() else None
        if index is None or index.ntotal != len(names) or index.d != self.dim:
            index = _faiss().IndexFlatIP(self.dim)
            if len(vectors):
                index.add(vectors)
            self._write_faiss(index)
        self.index = index

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return l2_normalize(self.embedder.embed(list(texts)))

    def _write_faiss(self, index: Any) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".{FAISS}.tmp"
        _faiss().write_index(index, str(tmp))
        tmp.replace(self.dir / FAISS)

    def _save(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        tmp = self.dir / f".{VECTORS}.tmp.npy"
        np.save(tmp, self.vectors)
        tmp.replace(self.dir / VECTORS)
        self._write_faiss(self.index)
        meta = {"format": FORMAT, "model_id": self.model_id, "dim": self.dim, "names": self.names}
        write_json_atomic(self.dir / META, meta)

    def __len__(self) -> int:
        return len(self.names)

    def lookup(self, name: str) -> str | None:
        """The indexed entity with the normalized key of ``name`` (exact match), if any."""
        return self._by_key.get(normalize_key(name))

    def sync(self, names: Iterable[str], batch_size: int = 16384) -> int:
        """Embed and add the names not indexed yet (by normalized key); returns how many.

        Saved after every batch, so an interrupted first build resumes where it stopped.
        """
        new: list[str] = []
        seen = set(self._by_key)
        for n in names:
            key = normalize_key(n)
            if key and key not in seen:
                seen.add(key)
                new.append(n.strip())
        for s in range(0, len(new), batch_size):
            part = new[s : s + batch_size]
            vecs = self._embed(part)
            self.vectors = np.ascontiguousarray(np.vstack([self.vectors, vecs]), dtype=np.float32)
            self.index.add(vecs)
            self.names.extend(part)
            for n in part:
                self._by_key.setdefault(normalize_key(n), n)
            self._save()
        if not new and not (self.dir / META).is_file():
            self._save()
        return len(new)

    def search(
        self, terms: Sequence[str], k: int = 10, min_sim: float = 0.9, *, inclusive: bool = False
    ) -> list[list[tuple[str, float]]]:
        """Per term, up to ``k`` ``(entity, cosine)`` with cosine > ``min_sim`` (``>=`` when
        ``inclusive``), most similar first."""
        if not terms:
            return []
        if not self.names or k <= 0:
            return [[] for _ in terms]
        sims, ids = self.index.search(self._embed(terms), min(k, len(self.names)))
        out: list[list[tuple[str, float]]] = []
        for row_s, row_i in zip(sims, ids, strict=True):
            hits = [
                (self.names[int(i)], float(s))
                for s, i in zip(row_s, row_i, strict=True)
                if i >= 0 and (s >= min_sim if inclusive else s > min_sim)
            ]
            out.append(hits)
        return out
