"""An index directory: the corpus store plus its BM25 and dense indexes, built incrementally.

Layout of ``DIR``::

    manifest.json     name, embedding model id and dimension, chunking settings, counts
    corpus.sqlite     documents, chunks, chunk vectors, per-document build state
    segments.json     the search segments and their deleted rows (biorag.retrieve.segments)
    segments/NAME/    one segment: BM25 postings and a FAISS index of a batch of chunks

``add`` stores new documents (content-hash ids make re-adding a no-op), chunks the pending ones,
embeds only chunks without a vector (committing every batch, so a killed build resumes where it
stopped), then indexes the new chunks as one more segment (merging small ones), so an add costs
what it adds; ``remove`` marks rows deleted.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biorag.config import ChunkingSettings, EmbedSettings, IndexSettings, RetrievalSettings
from biorag.corpus.audit import (
    DEFAULT_MAX_RECORD_CHARS,
    SKIPPED_FILE,
    audit_load,
    summarize_skips,
)
from biorag.corpus.chunking import chunk_document
from biorag.corpus.models import Document, LoadReport
from biorag.corpus.store import CorpusStore
from biorag.embed.windows import count_over_window, long_chunk_policy, mismatch_hint
from biorag.embed.worker import EmbedWorker
from biorag.errors import BioragError, IndexMismatchError
from biorag.retrieve.manifest import (  # noqa: F401  (the index's names, re-exported)
    FORMAT_VERSION,
    MANIFEST,
    index_stats,
    read_manifest,
    search_backend,
)
from biorag.retrieve.milvus_index import MilvusIndex, collection_name
from biorag.retrieve.segment_writer import SegmentWriter, write_lock
from biorag.retrieve.settings_record import record as record_settings
from biorag.util.files import write_json_atomic
from biorag.util.progress import progress, progress_bar

log = logging.getLogger(__name__)


@dataclass
class BuildReport:
    """What one build/add/remove did, for the CLI and ``--json``."""

    index: str
    documents_new: int = 0
    documents_total: int = 0
    chunks_new: int = 0
    chunks_total: int = 0
    chunks_embedded: int = 0
    documents_removed: int = 0
    skipped: int = 0
    skipped_examples: list[str] = field(default_factory=list)
    skipped_by_kind: dict[str, int] = field(default_factory=dict)
    skipped_file: str | None = None  # every skipped record of this load, with file and line
    duplicates: dict[str, Any] = field(default_factory=dict)
    # chunks longer than the local embedder reads, and how they were embedded
    long_chunks: dict[str, Any] = field(default_factory=dict)
    papers_without_fulltext: int = 0  # format paper_fulltexts: papers the index cannot hold
    executor: dict[str, Any] = field(default_factory=dict)  # where embedding ran, per worker
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class IndexDir:
    """Create, extend, shrink and describe an index directory."""

    def __init__(
        self,
        path: str | Path,
        embedder: Any,
        chunking: ChunkingSettings | None = None,
        retrieval: RetrievalSettings | None = None,
        name: str | None = None,
        index: IndexSettings | None = None,
        executor: Any = None,
        embed_settings: EmbedSettings | None = None,
    ):
        self.path = Path(path)
        self.embedder = embedder
        # a batch executor other than local embeds on its workers, each building the embedder
        # from ``embed_settings``
        self.executor = executor if getattr(executor, "kind", "local") != "local" else None
        self.embed_settings = embed_settings
        if self.executor is not None and embed_settings is None:
            raise ValueError("an executor needs the embed settings its workers build from")
        self.retrieval = retrieval or RetrievalSettings()
        self.index_settings = index or IndexSettings()
        self._milvus: Any = None
        existing = (self.path / MANIFEST).is_file()
        if existing:
            self.manifest = read_manifest(self.path)
            self._check_embedder(self.manifest)
            self.chunking = ChunkingSettings.model_validate(self.manifest["chunking"])
            if (
                self.index_settings.backend == "milvus"
                and search_backend(self.manifest) != "milvus"
            ):
                raise BioragError(
                    f"index {self.path} keeps its search on disk (backend local); "
                    "index.backend = 'milvus' applies to new indexes: build one in a new directory",
                    param="index.backend",
                )
        else:
            if (
                self.path.exists()
                and any(p.name != ".write.lock" for p in self.path.iterdir())
                and not (self.path / "corpus.sqlite").exists()
            ):
                raise BioragError(
                    f"{self.path} exists and is not a biorag index; choose an empty or new "
                    "directory",
                    param="out",
                )
            self.chunking = chunking or ChunkingSettings()
            self.manifest = {
                "format_version": FORMAT_VERSION,
                "name": name or self.path.name,
                "embed_model": embedder.model_id,
                "dim": int(embedder.dim),
                "chunking": self.chunking.model_dump(),
            }
            if self.index_settings.backend == "milvus":
                self.manifest["search_backend"] = {
                    "kind": "milvus",
                    "collection": collection_name(self.path, self.manifest["name"]),
                }
        self.path.mkdir(parents=True, exist_ok=True)
        self.store = CorpusStore(self.path / "corpus.sqlite")

    def _check_embedder(self, manifest: dict[str, Any]) -> None:
        if manifest.get("format_version") != FORMAT_VERSION:
            raise IndexMismatchError(
                f"index {self.path} has format {manifest.get('format_version')}, this biorag "
                f"reads format {FORMAT_VERSION}; rebuild it"
            )
        if (
            manifest["embed_model"] != self.embedder.model_id
            or manifest["dim"] != self.embedder.dim
        ):
            raise IndexMismatchError(
                f"index {self.path} was built with embedding model {manifest['embed_model']} "
                f"(dim {manifest['dim']}), but the configured model is {self.embedder.model_id} "
                f"(dim {self.embedder.dim}); set embed.model to the index's model or rebuild."
                + mismatch_hint(manifest["embed_model"], self.embedder.model_id)
            )

    @property
    def name(self) -> str:
        return self.manifest["name"]

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> IndexDir:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- building --------------------------------------------------------------------------
    def add(
        self,
        loaded: LoadReport | list[Document],
        batch_size: int = 256,
        max_record_chars: int = DEFAULT_MAX_RECORD_CHARS,
    ) -> BuildReport:
        """Store new documents, then chunk, embed and index everything still pending.

        A :class:`LoadReport` is audited first (:mod:`biorag.corpus.audit`): records over
        ``max_record_chars`` are refused, repeated records kept once, and every skipped record
        of this load is written to ``skipped.jsonl`` in the index directory."""

        with write_lock(self.path):
            return self._add(loaded, batch_size, max_record_chars)

    def _add(
        self, loaded: LoadReport | list[Document], batch_size: int, max_record_chars: int
    ) -> BuildReport:
        report = BuildReport(index=str(self.path))
        t0 = time.perf_counter()
        if isinstance(loaded, LoadReport):
            duplicates = audit_load(loaded, max_record_chars)
            report.duplicates = duplicates.to_dict()
            skips = summarize_skips(
                loaded.skipped, self.path / SKIPPED_FILE if loaded.skipped else None
            )
            if not loaded.skipped:
                (self.path / SKIPPED_FILE).unlink(missing_ok=True)  # not an earlier load's list
            report.skipped = skips.count
            report.skipped_examples = skips.first
            report.skipped_by_kind = skips.by_kind
            report.skipped_file = skips.file
            report.papers_without_fulltext = len(getattr(loaded, "without_fulltext", []))
        docs = loaded.documents if isinstance(loaded, LoadReport) else loaded
        report.documents_new = self.store.add_documents(docs)
        report.seconds["store"] = time.perf_counter() - t0
        self.resume(report, batch_size=batch_size)
        return report

    def resume(self, report: BuildReport | None = None, batch_size: int = 256) -> BuildReport:
        """Finish whatever an earlier (possibly interrupted) build left undone."""
        report = report or BuildReport(index=str(self.path))
        t = time.perf_counter()
        chunks_before = self.store.count_chunks()
        self._chunk_pending(batch_size)
        report.chunks_new = self.store.count_chunks() - chunks_before
        report.seconds["chunk"] = time.perf_counter() - t
        t = time.perf_counter()
        if self.executor is not None:
            report.chunks_embedded = self._embed_on_executor()
            report.executor = self.executor.stats()
        else:
            report.chunks_embedded = self._embed_missing(batch_size)
        report.seconds["embed"] = time.perf_counter() - t
        t = time.perf_counter()
        self.rebuild_search_indexes()
        report.seconds["index"] = time.perf_counter() - t
        report.documents_total = self.store.count_documents()
        report.chunks_total = self.store.count_chunks()
        report.long_chunks = dict(self.manifest.get("long_chunks") or {})
        self._write_manifest()
        return report

    def _count_long_chunks(self, texts: list[str], added: bool, removed: bool = False) -> None:
        """Keep count of the index's chunks longer than the local embedder reads (``texts``:
        every chunk, or those just ``added`` or ``removed``), and say so when they are many."""
        found = count_over_window(self.embedder, texts)
        if found is None:
            return
        before = self.manifest.get("long_chunks") or {}
        over = found["over_window"]
        if (added or removed) and before.get("window") == found["window"]:
            over = before.get("over_window", 0) + (-over if removed else over)
        total = self.store.count_chunks()
        policy = long_chunk_policy(self.embedder.model_id).split(":")[0]
        counted: dict[str, Any] = {
            "window": found["window"], "over_window": max(over, 0), "chunks": total,
            "embedded": policy,
        }  # fmt: skip
        self.manifest["long_chunks"] = counted
        if texts and not removed and counted["over_window"] > 0.1 * total:
            log.warning(
                "%d of %d chunks are longer than the embedding model reads (%d word pieces); "
                "dense retrieval sees their start (BM25 reads them whole). Set "
                "chunking.chunk_tokens = %d for chunks it reads whole",
                counted["over_window"], total, counted["window"], counted["window"],
            )  # fmt: skip

    def _chunk_pending(self, batch_size: int) -> None:

        pending = self.store.count_documents("pending")
        if not pending:
            return
        embed_fn = self.embedder.embed if self.chunking.method == "semantic" else None
        batch: list = []
        for doc in progress(
            self.store.iter_documents("pending"), "chunking", total=pending, unit="doc"
        ):
            batch.append((doc.id, chunk_document(doc, self.chunking, embed_fn=embed_fn)))
            if len(batch) >= batch_size:
                self.store.set_chunks(batch)
                batch = []
        if batch:
            self.store.set_chunks(batch)

    def _embed_missing(self, batch_size: int) -> int:
        missing = self.store.count_chunks(with_vectors=False)
        done = 0
        bar = progress_bar(missing, "embedding", unit="chunk")
        while rows := self.store.chunks_without_vectors(batch_size):
            vecs = self.embedder.embed([r[1] for r in rows])
            self.store.set_vectors([r[0] for r in rows], vecs)
            done += len(rows)
            bar.update(len(rows))
        bar.close()
        return done

    def _embed_on_executor(self) -> int:
        """Embed every chunk without a vector on the executor's workers; each batch of vectors
        is committed as it comes back (a killed build resumes with what is still missing)."""
        import numpy as np

        executor, settings = self.executor, self.embed_settings
        assert executor is not None and settings is not None
        rows = self.store.chunks_without_vectors(self.store.count_chunks(with_vectors=False))
        if not rows:
            return 0
        bar = progress_bar(len(rows), f"embedding ({executor.kind})", unit="chunk")
        args = (settings.model_dump(), self.embedder.model_id)
        texts = [t for _, t in rows]
        done = 0
        for idx, vecs in executor.map_batches(
            EmbedWorker, args, texts, executor.settings.batch_size
        ):
            vecs = np.asarray(vecs, dtype=np.float32)
            if vecs.ndim != 2 or vecs.shape[1] != self.manifest["dim"]:
                raise IndexMismatchError(
                    f"the workers returned vectors of shape {vecs.shape}, the index holds "
                    f"dimension {self.manifest['dim']}; give them the index's embedding model"
                )
            self.store.set_vectors([rows[i][0] for i in idx], vecs)
            done += len(idx)
            bar.update(len(idx))
        bar.close()
        return done

    @property
    def milvus(self) -> Any:
        """The index's Milvus collection (backend milvus only), connected on first use."""
        if self._milvus is None:
            self._milvus = MilvusIndex.of_index(self.path, self.manifest, self.index_settings)
        return self._milvus

    def rebuild_search_indexes(self) -> None:
        """Bring the search indexes up to date with the store: the local ones gain a segment of
        what was added (:mod:`biorag.retrieve.segment_writer`); a Milvus collection is sent
        only what it lacks."""
        if search_backend(self.manifest) == "milvus":
            bar = progress_bar(None, "sending to Milvus", unit="chunk")
            self.milvus.ensure(self.retrieval.bm25_k1, self.retrieval.bm25_b)
            self.milvus.sync(self.store, bar=bar)
            bar.close()
            return

        writer = SegmentWriter(self.path, int(self.manifest["dim"]), self.retrieval)
        bar = progress_bar(None, "indexing", unit="chunk")
        texts = writer.update(self.store, bar=bar)
        bar.close()
        self._count_long_chunks(texts, added=not writer.rebuilt)

    def remove(self, keys: list[str]) -> BuildReport:
        """Delete documents (by content id or source id) from the store and the search
        indexes (their rows marked deleted: no rebuild)."""

        with write_lock(self.path):
            return self._remove(keys)

    def _remove(self, keys: list[str]) -> BuildReport:
        report = BuildReport(index=str(self.path))
        ids: list[str] = []
        for key in keys:
            found = self.store.resolve_document_ids(key)
            if not found:
                raise BioragError(
                    f"no document with id or source id {key!r} in {self.path}; "
                    "the index's stats list its counts"
                )
            ids.extend(found)
        gone = self.store.chunks_of_documents(ids)
        report.documents_removed = self.store.remove_documents(ids)
        if search_backend(self.manifest) == "milvus":
            self.milvus.delete_documents(ids)
        else:
            writer = SegmentWriter(self.path, int(self.manifest["dim"]), self.retrieval)
            writer.remove({cid for cid, _ in gone})
            writer.update(self.store)  # reconciles what an earlier removal left half done
            self._count_long_chunks([t for _, t in gone], added=False, removed=True)
        report.documents_total = self.store.count_documents()
        report.chunks_total = self.store.count_chunks()
        self._write_manifest()
        return report

    def _write_manifest(self) -> None:
        self.manifest["counts"] = {
            "documents": self.store.count_documents(),
            "chunks": self.store.count_chunks(),
        }
        self.manifest["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        self.manifest["retrieval"] = record_settings(self.retrieval)
        write_json_atomic(self.path / MANIFEST, self.manifest)
