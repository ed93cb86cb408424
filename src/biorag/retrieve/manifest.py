"""An index directory's manifest, and what ``biorag index stats`` reads without a model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from biorag.corpus.store import CorpusStore
from biorag.embed.windows import long_chunk_policy
from biorag.errors import BioragError
from biorag.retrieve.segments import read_state

FORMAT_VERSION = 1
MANIFEST = "manifest.json"


def read_manifest(path: Path) -> dict[str, Any]:
    mpath = Path(path) / MANIFEST
    if not mpath.is_file():
        raise BioragError(
            f"{path} is not a biorag index (no {MANIFEST}); build one from a corpus first "
            "(biorag index build, or IndexDir.add)"
        )
    try:
        return json.loads(mpath.read_text(encoding="utf-8"))
    except ValueError as e:
        raise BioragError(f"{mpath} is not valid JSON ({e}); rebuild the index") from e


def search_backend(manifest: dict[str, Any]) -> str:
    """Where an index keeps its search structures: ``local`` (on disk) or ``milvus``."""
    return str((manifest.get("search_backend") or {}).get("kind", "local"))


def _segment_stats(path: Path) -> dict[str, Any] | None:
    """How a local index's search is split: segments, their rows, rows marked deleted."""

    state = read_state(path)
    if state is None:
        return None
    segs = state["segments"]
    return {
        "count": len(segs),
        "rows": [s["rows"] for s in segs],
        "deleted_rows": sum(len(s["deleted"]) for s in segs),
    }


def index_stats(path: str | Path) -> dict[str, Any]:
    """Counts, embedding model and build state, read without loading any model."""
    path = Path(path)
    manifest = read_manifest(path)
    store = CorpusStore(path / "corpus.sqlite")
    try:
        by_state = store.state_counts()
        docs = store.count_documents()
        return {
            "index": str(path),
            "name": manifest["name"],
            "embed_model": manifest["embed_model"],
            "dim": manifest["dim"],
            "chunking": manifest["chunking"],
            "documents": docs,
            "documents_by_state": by_state,
            "chunks": store.count_chunks(),
            "chunks_embedded": store.count_chunks(with_vectors=True),
            "complete": by_state.get("embedded", 0) == docs,
            "search_backend": manifest.get("search_backend") or {"kind": "local"},
            # the [retrieval] settings of its last build or add (None: built before they were kept)
            "retrieval": manifest.get("retrieval"),
            "segments": _segment_stats(path),
            "long_chunks": {
                **(manifest.get("long_chunks") or {}),
                "policy": long_chunk_policy(manifest["embed_model"]),
            },
        }
    finally:
        store.close()
