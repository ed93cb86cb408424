"""An index's search structures in Milvus: dense vectors (HNSW) and BM25 in one collection.

``index.backend = "milvus"`` keeps the corpus store (documents, chunks, vectors, build state) in
the index directory as always, and sends every embedded chunk to a Milvus collection: its id,
document id, vector, and its BM25 terms (``terms``: the text through biorag's own BM25
tokenizer, lower-cased, stop words dropped, Snowball-stemmed, joined by spaces; queries go
through the same tokenizer). Milvus computes BM25 itself from the terms (its BM25 function, a
sparse inverted index), so every Milvus server sees the tokens the local backend sees whatever
analyzers it has; it searches dense vectors by HNSW, and hybrid search fuses the two in the
server (RRF, or weighted scores). One :class:`pymilvus.MilvusClient` talks to Milvus standalone,
a cluster or milvus-lite in server mode alike.

Sending is incremental and resumable: chunks are sent in storage order (the store's ``seq``) in
batches, each an upsert keyed by chunk id, and the last ``seq`` sent is saved after each batch
(``milvus.json`` in the index directory). An interrupted push resumes after its last saved batch;
a batch sent twice overwrites itself, so nothing is duplicated. Removed documents are deleted by
document id; :meth:`MilvusIndex.reconcile` repairs a collection whose count no longer matches
the store (a removal interrupted between the store and the server).

Differences from the local backend, by Milvus's design: BM25's IDF is computed per segment, so
BM25 scores differ slightly from bm25s's; RRF takes no weights; weighted fusion normalizes each
score with Milvus's arctan rule, not min-max.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
from pathlib import Path
from typing import Any

import numpy as np

from biorag.errors import BioragError
from biorag.retrieve.bm25 import Tokenizer
from biorag.retrieve.fusion import convex_score_fusion, reciprocal_rank_fusion
from biorag.retrieve.hits import Hit
from biorag.util.files import write_json_atomic
from biorag.util.secrets import mask_url

log = logging.getLogger(__name__)

STATE_FILE = "milvus.json"
TEXT_MAX = 65535  # Milvus's VARCHAR limit (bytes)
HNSW = {"M": 16, "efConstruction": 200}
INSTALL = "pip install 'biorag[milvus]'"
SEARCH_BATCH = 256  # queries per search request


def collection_name(index_path: Path, name: str) -> str:
    """A Milvus collection name for the index at ``index_path``: letters, digits and ``_``,
    unique per index directory."""
    slug = re.sub(r"[^A-Za-z0-9_]", "_", name)[:40]
    digest = hashlib.sha256(str(index_path.resolve()).encode()).hexdigest()[:10]
    return f"biorag_{slug}_{digest}"


def _client(uri: str, token_env: str | None) -> Any:
    try:
        from pymilvus import MilvusClient
        from pymilvus.exceptions import MilvusException
    except ImportError:
        raise BioragError(
            f"index.backend 'milvus' needs the Milvus client: {INSTALL}", param="index.backend"
        ) from None
    token = os.environ.get(token_env, "") if token_env else ""
    try:
        return MilvusClient(uri=uri, token=token, timeout=30)
    except MilvusException as e:
        raise BioragError(
            f"index.milvus_uri {mask_url(uri)} is not reachable ({e.message}): start the Milvus "
            "server or fix index.milvus_uri",
            param="index.milvus_uri",
        ) from None


class MilvusIndex:
    """One index directory's collection in the Milvus server at ``uri``."""

    def __init__(
        self,
        index_path: Path,
        uri: str | None,
        collection: str,
        dim: int,
        token_env: str | None = None,
    ) -> None:
        if not uri:
            raise BioragError(
                f"index {index_path} keeps its search in Milvus: set index.milvus_uri "
                "(BIORAG_INDEX_MILVUS_URI) to the server's address",
                param="index.milvus_uri",
            )
        self.path = Path(index_path)
        self.uri = uri
        self.collection = collection
        self.dim = dim
        self.client = _client(uri, token_env)

        self.tokenize = Tokenizer()

    @classmethod
    def of_index(cls, path: Path, manifest: dict[str, Any], settings: Any) -> MilvusIndex:
        """The collection of the index at ``path`` (its ``manifest``), on the server that
        ``settings`` (:class:`~biorag.config.IndexSettings`) name."""
        return cls(
            Path(path),
            settings.milvus_uri,
            manifest["search_backend"]["collection"],
            int(manifest["dim"]),
            settings.milvus_token_env,
        )

    def _call(self, what: str, fn: Any, *args: Any, **kw: Any) -> Any:
        from pymilvus.exceptions import MilvusException

        try:
            return fn(*args, **kw)
        except MilvusException as e:
            raise BioragError(
                f"Milvus at index.milvus_uri {mask_url(self.uri)} failed to {what} in collection "
                f"{self.collection} ({e.message}); check the server, or rebuild the index's "
                "collection with biorag index add",
                param="index.milvus_uri",
            ) from None

    # -- the collection ------------------------------------------------------------------------

    def ensure(self, bm25_k1: float = 0.9, bm25_b: float = 0.5) -> bool:
        """Create the collection (schema, HNSW and BM25 indexes) when missing, and load it;
        True when it was created (then nothing has been sent to it: the record is reset)."""
        c = self.client
        if self._call("look up", c.has_collection, self.collection):
            fields = self._call("describe", c.describe_collection, self.collection)["fields"]
            dims = [f["params"].get("dim") for f in fields if f["name"] == "dense"]
            if dims and int(dims[0]) != self.dim:
                raise BioragError(
                    f"Milvus collection {self.collection} holds {dims[0]}-d vectors, the index "
                    f"{self.dim}-d; drop the collection or build a new index"
                )
            self._call("load", c.load_collection, self.collection)
            return False
        from pymilvus import DataType, Function, FunctionType, MilvusClient

        schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("chunk_id", DataType.VARCHAR, is_primary=True, max_length=128)
        schema.add_field("doc_id", DataType.VARCHAR, max_length=128)
        schema.add_field("terms", DataType.VARCHAR, max_length=TEXT_MAX, enable_analyzer=True)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=self.dim)
        schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_function(
            Function(
                name="text_bm25",
                function_type=FunctionType.BM25,
                input_field_names=["terms"],
                output_field_names=["sparse"],
            )
        )
        params = c.prepare_index_params()
        params.add_index(field_name="dense", index_type="HNSW", metric_type="COSINE", params=HNSW)
        params.add_index(
            field_name="sparse",
            index_type="SPARSE_INVERTED_INDEX",
            metric_type="BM25",
            params={"bm25_k1": bm25_k1, "bm25_b": bm25_b},
        )
        self._call(
            "create", c.create_collection, self.collection, schema=schema, index_params=params
        )
        self._save_state(0)  # a new collection (another server, or one dropped) holds nothing
        return True

    def open(self) -> None:
        """Load the collection for searching (nothing is created or reset: reading writes
        nothing); a clear error when the server does not have it."""
        if not self._call("look up", self.client.has_collection, self.collection):
            raise BioragError(
                f"Milvus at index.milvus_uri {mask_url(self.uri)} has no collection "
                f"{self.collection} for index {self.path}: point index.milvus_uri at the server "
                "the index was built on, or send it there again by building the index from its "
                "corpus into the same directory (only the chunks are sent; nothing is embedded "
                "again)",
                param="index.milvus_uri",
            )
        self._call("load", self.client.load_collection, self.collection)

    def drop(self) -> None:
        if self._call("look up", self.client.has_collection, self.collection):
            self._call("drop", self.client.drop_collection, self.collection)
        (self.path / STATE_FILE).unlink(missing_ok=True)

    def count(self) -> int:
        rows = self._call(
            "count", self.client.query, self.collection, filter="", output_fields=["count(*)"]
        )
        return int(rows[0]["count(*)"]) if rows else 0

    # -- sending chunks ------------------------------------------------------------------------

    def _state(self) -> dict[str, Any]:
        path = self.path / STATE_FILE
        if not path.is_file():
            return {"collection": self.collection, "sent_seq": 0}
        state = json.loads(path.read_text(encoding="utf-8"))
        return state if state.get("collection") == self.collection else {"sent_seq": 0}

    def _save_state(self, sent_seq: int) -> None:
        write_json_atomic(
            self.path / STATE_FILE, {"collection": self.collection, "sent_seq": sent_seq}
        )

    def sync(self, store: Any, bar: Any = None) -> int:
        """Make the collection hold exactly the store's embedded chunks: delete rows of chunks
        gone from the store, send what it has not had, and send everything again when it holds
        fewer rows than the store has chunks (a server that lost data); returns rows sent."""
        self.reconcile(store)
        sent = self.push(store, bar=bar)
        if self.count() < store.count_chunks(with_vectors=True):
            log.warning(
                "Milvus collection %s holds fewer rows than the index has chunks; sending all",
                self.collection,
            )
            self._save_state(0)
            sent += self.push(store, bar=bar)
        return sent

    def push(self, store: Any, batch_size: int = 1000, bar: Any = None) -> int:
        """Send the store's embedded chunks the collection has not had yet (resumable, no
        duplicates); returns how many were sent."""
        sent = 0
        seq = int(self._state().get("sent_seq", 0))
        while rows := store.chunk_rows_after(seq, batch_size):
            data = [
                {
                    "chunk_id": cid,
                    "doc_id": doc_id,
                    "terms": _fit(" ".join(self.tokenize(text))),
                    "dense": np.frombuffer(blob, dtype=np.float32).tolist(),
                }
                for _, cid, doc_id, text, blob in rows
            ]
            self._call("store chunks", self.client.upsert, self.collection, data)
            seq = int(rows[-1][0])
            self._save_state(seq)
            sent += len(rows)
            if bar is not None:
                bar.update(len(rows))
        if sent:
            self._call("flush", self.client.flush, self.collection)
        return sent

    def delete_documents(self, doc_ids: list[str]) -> None:
        for i in range(0, len(doc_ids), 500):
            part = doc_ids[i : i + 500]
            self._call(
                "delete",
                self.client.delete,
                self.collection,
                filter=f"doc_id in {json.dumps(part)}",
            )

    def reconcile(self, store: Any) -> int:
        """Delete rows whose chunk the store no longer has (a removal cut short between the
        store and the server); returns how many."""
        if self.count() <= store.count_chunks(with_vectors=True):
            return 0
        known = set(store.chunk_doc_ids())
        stale: list[str] = []
        it = self._call(
            "list", self.client.query_iterator, self.collection, batch_size=5000,
            filter="", output_fields=["chunk_id"],
        )  # fmt: skip
        while page := it.next():
            stale.extend(r["chunk_id"] for r in page if r["chunk_id"] not in known)
        it.close()
        for i in range(0, len(stale), 1000):
            self._call("delete", self.client.delete, self.collection, ids=stale[i : i + 1000])
        return len(stale)

    # -- searching -----------------------------------------------------------------------------

    def rank(
        self,
        queries: list[str],
        qvecs: np.ndarray | None,
        depth: int,
        retriever: str,
        fusion: str = "score",
        dense_weight: float = 0.5,
        rrf_k: int = 60,
        fuse_in: str = "client",
    ) -> list[list[Hit]]:
        """The top ``depth`` chunk ids of each query by ``retriever`` (bm25, dense or hybrid),
        all queries in one request per list. A hybrid is fused here from the server's two lists
        as the local backend fuses (:mod:`biorag.retrieve.fusion`), or in the server
        (``fuse_in="server"``: RRFRanker, or WeightedRanker). A query of stop words only has no
        BM25 list (its hybrid is its dense list)."""

        terms = [" ".join(self.tokenize(q)) for q in queries]
        vecs = [v.astype(np.float32).tolist() for v in qvecs] if qvecs is not None else []
        if retriever == "bm25":
            return self._lists(terms, "sparse", depth)
        if retriever == "dense":
            return self._lists(vecs, "dense", depth)
        if fuse_in == "server":
            return self._fused_in_server(terms, vecs, depth, fusion, dense_weight, rrf_k)
        lex, sem, w = (
            self._lists(terms, "sparse", depth),
            self._lists(vecs, "dense", depth),
            dense_weight,
        )
        if fusion == "rrf":
            return [
                reciprocal_rank_fusion([b, d], k=rrf_k, weights=[1 - w, w], limit=depth)
                for b, d in zip(lex, sem, strict=True)
            ]
        return [
            convex_score_fusion([b, d], [1 - w, w], limit=depth)
            for b, d in zip(lex, sem, strict=True)
        ]

    def _params(self, field: str, depth: int) -> dict[str, Any]:
        if field == "sparse":
            return {"metric_type": "BM25"}
        return {"metric_type": "COSINE", "params": {"ef": max(64, 2 * depth)}}

    def _lists(self, data: list[Any], field: str, depth: int) -> list[list[Hit]]:
        """One search of ``field`` for every non-empty item of ``data``, in batches; an empty
        item (a query without BM25 terms) gets an empty list."""
        out: list[list[Hit]] = [[] for _ in data]
        asked = [i for i, d in enumerate(data) if len(d)]
        for start in range(0, len(asked), SEARCH_BATCH):
            part = asked[start : start + SEARCH_BATCH]
            res = self._call(
                "search", self.client.search, self.collection, data=[data[i] for i in part],
                anns_field=field, limit=depth, search_params=self._params(field, depth),
                output_fields=["chunk_id"],
            )  # fmt: skip
            for i, hits in zip(part, res, strict=True):
                out[i] = _hits(hits)
        return out

    def _fused_in_server(
        self,
        terms: list[str],
        vecs: list[list[float]],
        depth: int,
        fusion: str,
        dense_weight: float,
        rrf_k: int,
    ) -> list[list[Hit]]:
        from pymilvus import AnnSearchRequest, RRFRanker, WeightedRanker

        ranker = (
            RRFRanker(rrf_k) if fusion == "rrf" else WeightedRanker(1 - dense_weight, dense_weight)
        )
        both = [i for i, t in enumerate(terms) if t]
        out = self._lists([v if not terms[i] else [] for i, v in enumerate(vecs)], "dense", depth)
        for start in range(0, len(both), SEARCH_BATCH):
            part = both[start : start + SEARCH_BATCH]
            reqs = [
                AnnSearchRequest(data=[terms[i] for i in part], anns_field="sparse",
                                 param=self._params("sparse", depth), limit=depth),
                AnnSearchRequest(data=[vecs[i] for i in part], anns_field="dense",
                                 param=self._params("dense", depth), limit=depth),
            ]  # fmt: skip
            res = self._call(
                "search", self.client.hybrid_search, self.collection, reqs=reqs, ranker=ranker,
                limit=depth, output_fields=["chunk_id"],
            )  # fmt: skip
            for i, hits in zip(part, res, strict=True):
                out[i] = _hits(hits)
        return out


def _hits(found: Any) -> list[Hit]:
    """One query's results as hits, best first (milvus-lite gives BM25 distances a negative
    sign; the order is best first anyway)."""
    return [Hit(id=str(h.id), score=abs(float(h.distance)), rank=r) for r, h in enumerate(found, 1)]


def _fit(text: str) -> str:
    """``text`` cut to Milvus's VARCHAR limit (bytes, not characters)."""
    raw = text.encode("utf-8")
    return text if len(raw) <= TEXT_MAX else raw[:TEXT_MAX].decode("utf-8", "ignore")
