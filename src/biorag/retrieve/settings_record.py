"""The retrieval settings an index was built with, kept in its manifest, and what a search with
other settings differs in (said once, when the index is opened)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from biorag.config import RetrievalSettings
from biorag.retrieve.segments import STATE

#: per-request choices, not how an index ranks
NOT_RECORDED = frozenset({"k", "per_corpus_k", "corpus_retrievers"})


def record(settings: RetrievalSettings) -> dict[str, Any]:
    """The settings recorded in an index's manifest (``manifest["retrieval"]``)."""
    return settings.model_dump(exclude=set(NOT_RECORDED))


def differences(manifest: dict[str, Any], settings: RetrievalSettings) -> list[str]:
    """``name=value (built with old)`` for each recorded setting ``settings`` changes; nothing
    for an index built before settings were recorded."""
    built = manifest.get("retrieval")
    if not isinstance(built, dict):
        return []
    return [
        f"retrieval.{k}={v!r} (built with {built[k]!r})"
        for k, v in record(settings).items()
        if k in built and built[k] != v
    ]


def index_key(path: Path, manifest: dict[str, Any]) -> str:
    """A key that changes whenever the index's chunks do: its committed segment list, or (an
    index without segments, or kept in Milvus) its manifest's counts and update time."""
    state = Path(path) / STATE
    if state.is_file():
        text = state.read_bytes()
    else:
        text = json.dumps([manifest.get("counts"), manifest.get("updated_at")]).encode()
    return hashlib.sha256(text).hexdigest()[:16]
