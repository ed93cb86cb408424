"""Searching index directories: BM25, dense, or both fused by reciprocal rank, at chunk or
document level, over one corpus or several searched separately and merged (all of them, or
only the corpora named).
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any, Literal

from biorag.config import IndexSettings, RetrievalSettings
from biorag.corpus.store import CorpusStore
from biorag.embed.windows import mismatch_hint
from biorag.errors import REBUILD_INDEX, BioragError, IndexMismatchError, reading
from biorag.retrieve.exclusion import Exclusion
from biorag.retrieve.index import read_manifest, search_backend
from biorag.retrieve.milvus_index import MilvusIndex
from biorag.retrieve.passage import Passage
from biorag.retrieve.ranking import LocalRanking, doc_ranking, expander
from biorag.retrieve.second_dense import SecondDense
from biorag.retrieve.segments import open_local
from biorag.retrieve.settings_record import differences, index_key

Retriever = Literal["bm25", "dense", "hybrid"]
Level = Literal["chunk", "doc"]
RETRIEVERS = ("bm25", "dense", "hybrid")
LEVELS = ("chunk", "doc")

log = logging.getLogger(__name__)

#: the deepest ranking a search asks for when excluded hits leave it short: Milvus's top-k limit
MAX_DEPTH = 16_384


class Searcher:
    """Opens one index directory read-only and answers queries."""

    def __init__(
        self,
        path: str | Path,
        embedder: Any,
        settings: RetrievalSettings | None = None,
        index: IndexSettings | None = None,
        second_embedder: Any = None,
    ):
        self.path = Path(path)
        self.settings = st = settings or RetrievalSettings()
        self.manifest = read_manifest(self.path)
        self.name: str = self.manifest["name"]
        # ``embedder`` may be a zero-argument callable, so BM25-only use never loads a model.
        self._embedder = embedder
        with reading(
            self.path / "corpus.sqlite", "the index's documents and chunks", REBUILD_INDEX
        ):
            self.store = CorpusStore(self.path / "corpus.sqlite")
        self.settings_differ = differ = differences(self.manifest, st)
        if differ:
            log.warning("index %s: searched with other retrieval settings than it was built "
                        "with: %s", self.name, "; ".join(differ))  # fmt: skip
        self.key = index_key(self.path, self.manifest)
        self.expand = expander(self.path, self.key, st, self._all_texts)
        self.milvus: Any = None
        cfg = index or IndexSettings()
        self.milvus_fusion = cfg.milvus_fusion
        if search_backend(self.manifest) == "milvus":
            for name, off in (("prf", st.prf == "none"), ("second_encoder", not st.second_encoder)):
                if not off:
                    raise BioragError(
                        f"retrieval.{name} is not available with the Milvus backend (index "
                        f"{self.name}): Milvus keeps one vector field and no term statistics a "
                        f"client can read; unset retrieval.{name} or use a local index",
                        param=f"retrieval.{name}",
                    )
            self.milvus = MilvusIndex.of_index(self.path, self.manifest, cfg)
            self.milvus.open()
            return
        self.bm25, self.dense = open_local(self.path, self.manifest["dim"], st)
        second = None
        if st.second_encoder:
            emb2 = second_embedder() if callable(second_embedder) else second_embedder
            if emb2 is None:
                from biorag.config import EmbedSettings
                from biorag.embed.factory import build_embedder

                emb2 = build_embedder(EmbedSettings(model=st.second_encoder))
            second = SecondDense(self.path, emb2, self.key, st.dense_index, st.hnsw_min_size)
        self.ranking = LocalRanking(
            self.bm25, self.dense, lambda: self.embedder, st, self._texts_of, self.expand, second
        )

    def _all_texts(self) -> list[str]:
        with self._reading_store():
            return self.store.all_chunk_texts()[1]

    def _texts_of(self, ids: list[str]) -> dict[str, str]:
        with self._reading_store():
            return {cid: c.text for cid, c in self.store.get_chunks(ids).items()}

    @property
    def embedder(self) -> Any:
        emb = self._embedder
        if callable(emb) and not hasattr(emb, "embed"):
            emb = self._embedder = emb()
        if emb is None:
            raise BioragError("dense retrieval needs an embedding model; configure [embed]")
        if self.manifest["embed_model"] != emb.model_id or self.manifest["dim"] != emb.dim:
            raise IndexMismatchError(
                f"index {self.path} was built with {self.manifest['embed_model']} "
                f"(dim {self.manifest['dim']}); the configured embedding model is "
                f"{emb.model_id} (dim {emb.dim}). Set embed.model to the index's model or rebuild."
                + mismatch_hint(self.manifest["embed_model"], emb.model_id)
            )
        return emb

    def close(self) -> None:
        self.store.close()

    def _rank(self, queries: list[str], depth: int, retriever: str) -> list[list[Any]]:

        if retriever not in RETRIEVERS:
            raise BioragError(f"unknown retriever {retriever!r}; choose one of {RETRIEVERS}")
        if self.milvus is not None:
            st = self.settings
            texts = [self.expand.expand(q) for q in queries] if self.expand else queries
            dense_q = texts if st.abbreviations_for == "all" else queries
            qvecs = self.embedder.embed(dense_q) if retriever != "bm25" else None
            return self.milvus.rank(
                texts, qvecs, depth, retriever, st.fusion, st.dense_weight, st.rrf_k,
                fuse_in=self.milvus_fusion,
            )  # fmt: skip
        return self.ranking.rank(queries, depth, retriever)

    def _reading_store(self) -> Any:
        return reading(self.path / "corpus.sqlite", "the index's documents", REBUILD_INDEX)

    def search(
        self,
        queries: list[str],
        k: int = 10,
        retriever: str = "hybrid",
        level: str = "chunk",
        exclude: Exclusion | None = None,
    ) -> list[list[Passage]]:
        """Top ``k`` chunks (or documents: each document's best chunk) for each query.

        ``exclude``: documents whose hits are left out (and counted), the search going deeper
        until ``k`` others are found or the index has no more (:mod:`.exclusion`)."""
        if level not in LEVELS:
            raise BioragError(f"unknown level {level!r}; choose one of {LEVELS}")
        # retrieval.corpus_retrievers names this index's own retriever (MedRAG-style corpora)
        retriever = self.settings.corpus_retrievers.get(self.name, retriever)
        depth = max(2 * k, 50) if level == "chunk" else max(10 * k, 100)
        out: list[list[Passage]] = [[] for _ in queries]
        todo = list(range(len(queries)))
        limit: int | None = None  # how deep a deeper search may go (:meth:`_depth_limit`)
        while todo:
            rankings = self._rank([queries[i] for i in todo], depth, retriever)
            found = self._found(rankings)
            if level == "doc" and self.settings.doc_score != "max":
                chunk_doc = {cid: c.doc_id for cid, c in found[0].items()}
                rankings = [doc_ranking(r, chunk_doc, self.settings.doc_score) for r in rankings]
            short = []
            for qi, ranking in zip(todo, rankings, strict=True):
                passages, excluded, lost = self._select(ranking, found, k, level, retriever,
                                                        exclude)  # fmt: skip
                out[qi] = passages
                if len(passages) < k and lost and len(ranking) >= depth:
                    limit = self._depth_limit() if limit is None else limit
                    if depth < limit:
                        short.append(qi)  # excluded hits left out, the index has more: deeper
                        continue
                if exclude is not None:
                    exclude.count(excluded)
            todo, depth = short, min(depth * 4, limit or MAX_DEPTH)
        return out

    def _depth_limit(self) -> int:
        """The deepest ranking a search that lost hits to an exclusion asks for: the index's
        chunks (no deeper ranking holds more), and never more than :data:`MAX_DEPTH`."""
        with self._reading_store():
            return min(self.store.count_chunks(), MAX_DEPTH)

    def _found(self, rankings: list[list[Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The chunks the hits of ``rankings`` name and their documents."""
        wanted = sorted({h.id for r in rankings for h in r})
        with reading(
            self.path / "corpus.sqlite", "the index's documents and chunks", REBUILD_INDEX
        ):
            chunks = self.store.get_chunks(wanted)
            docs = self.store.get_documents(sorted({c.doc_id for c in chunks.values()}))
        return chunks, docs

    def _select(
        self,
        ranking: list[Any],
        found: tuple[dict[str, Any], dict[str, Any]],
        k: int,
        level: str,
        retriever: str,
        exclude: Exclusion | None,
    ) -> tuple[list[Passage], list[str], bool]:
        """``(the top k passages of ranking, the excluded ids met among them, whether excluded
        hits were left out)``: hits of chunks removed since the indexes were loaded, of
        documents already given (``level="doc"``) or excluded are passed over."""
        chunks, docs = found
        passages: list[Passage] = []
        excluded: list[str] = []
        seen_docs: set[str] = set()
        lost = False
        for hit in ranking:
            chunk = chunks.get(hit.id)
            doc = docs.get(chunk.doc_id) if chunk is not None else None
            if chunk is None or doc is None:  # removed since these indexes were loaded
                continue
            if level == "doc":
                if chunk.doc_id in seen_docs:
                    continue
                seen_docs.add(chunk.doc_id)
            key = exclude.key_of(doc.id, doc.source_id) if exclude is not None else None
            if key is not None:
                excluded.append(key)
                if exclude is not None and exclude.drops(key):
                    lost = True
                    continue
            passages.append(
                Passage(
                    chunk_id=chunk.id,
                    doc_id=doc.id,
                    source_id=doc.source_id,
                    title=doc.title,
                    text=chunk.text,
                    score=float(hit.score),
                    rank=len(passages) + 1,
                    corpus=self.name,
                    retriever=retriever,
                    start=chunk.start,
                    end=chunk.end,
                )
            )
            if len(passages) >= k:
                break
        return passages, excluded, lost


class MultiSearcher:
    """Several named corpora, each searched separately; results merged rank by rank.

    CLAIMS takes a few chunks from every source (``per_corpus_k``, 3 by default), so one large
    corpus cannot crowd the others out. ``search(..., corpora=[...])`` searches only the named
    corpora (an index's name is its manifest ``name``: ``biorag index build --name``, by default
    the index folder's name); IP-RAR uses it to keep the abstract and full-text levels apart.
    """

    def __init__(self, searchers: list[Searcher]):
        if not searchers:
            raise BioragError("no index given: one index directory per corpus", param="index")
        names = [s.name for s in searchers]
        if len(set(names)) != len(names):
            raise BioragError(f"two indexes share a name ({names}); give each corpus its own name")
        unknown = sorted(set(searchers[0].settings.corpus_retrievers) - set(names))
        if unknown:
            log.warning(
                "retrieval.corpus_retrievers names %s, but no index searched has that name "
                "(the indexes: %s)",
                ", ".join(unknown),
                ", ".join(names),
            )
        self.searchers = searchers
        # One search at a time: the indexes' SQLite stores are shared by the threads that
        # search them (concurrent questions of an eval, requests of a service).
        self._lock = threading.Lock()

    @property
    def names(self) -> list[str]:
        """The corpus names, in ``--index`` order."""
        return [s.name for s in self.searchers]

    def select(self, corpora: list[str] | None) -> list[Searcher]:
        """The searchers of ``corpora`` (all when None), in the order named, duplicates dropped.

        Raises :class:`BioragError` naming an unknown corpus and the available ones.
        """
        if corpora is None:
            return self.searchers
        if isinstance(corpora, str):
            corpora = [corpora]
        if not corpora:
            raise BioragError(f"corpora is empty; name at least one of {self.names} or pass None")
        by_name = {s.name: s for s in self.searchers}
        for name in corpora:
            if name not in by_name:
                raise BioragError(
                    f"unknown corpus {name!r}; the indexes searched are named "
                    f"{', '.join(map(repr, self.names))} (an index's name is its manifest name: "
                    "the folder name unless named when built)",
                    param="index",
                )
        return [by_name[n] for n in dict.fromkeys(corpora)]

    def search(
        self,
        queries: list[str],
        k: int,
        retriever: str = "hybrid",
        level: str = "chunk",
        corpora: list[str] | None = None,
        exclude: Exclusion | None = None,
    ) -> list[list[Passage]]:
        """Top ``k`` of each corpus for each query, merged rank by rank (rank 1 of every corpus,
        then rank 2, ...) and renumbered; ``corpora`` limits the search to the named corpora;
        ``exclude``: documents left out (:meth:`Searcher.search`). Thread-safe: concurrent
        callers take turns."""
        chosen = self.select(corpora)
        with self._lock:
            per = [s.search(queries, k, retriever, level, exclude) for s in chosen]
        merged: list[list[Passage]] = []
        for qi in range(len(queries)):
            lists = [p[qi] for p in per]
            row: list[Passage] = []
            for r in range(k):
                row.extend(lst[r] for lst in lists if r < len(lst))
            for i, p in enumerate(row, start=1):
                p.rank = i
            merged.append(row)
        return merged

    def get_document(
        self, key: str, corpora: list[str] | None = None, spans: bool = False
    ) -> dict[str, Any] | None:
        """The first document of the indexes (of ``corpora``: all when None) with content id or
        source id ``key`` (its fields, with ``spans`` when asked, and its corpus name), or None.
        Thread-safe."""
        chosen = self.select(corpora)
        with self._lock:
            for s in chosen:
                with s._reading_store():
                    docs = s.store.get_documents(s.store.resolve_document_ids(key))
                if docs:
                    doc = next(iter(docs.values()))
                    fields = doc.model_dump(exclude=None if spans else {"spans"})
                    return {**fields, "corpus": s.name}
        return None

    def list_documents(
        self, corpus: str, offset: int, limit: int, match: str = ""
    ) -> dict[str, Any]:
        """A page of corpus ``corpus``'s documents (those whose ids or title hold ``match``)
        with its total count and, searching, how many match. Thread-safe."""
        (s,) = self.select([corpus])
        with self._lock, s._reading_store():
            page = {
                "corpus": s.name,
                "total": s.store.count_documents(),
                "states": s.store.state_counts(),
                "documents": s.store.list_documents(offset, limit, match),
            }
            if match.strip():
                page["matching"] = s.store.count_documents(match=match)
            return page

    def close(self) -> None:
        with self._lock:
            for s in self.searchers:
                s.close()
