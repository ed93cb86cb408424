"""The corpus store: documents, chunks, their vectors and a status table, in one SQLite file.

Document ids are content hashes, so adding a document that is already there is a no-op. The
``state`` column of ``documents`` records how far each document got (``pending`` -> ``chunked``
-> ``embedded``); an interrupted build picks up the documents that did not reach the end. Every
batch is committed, so a kill loses at most the batch in flight.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from biorag.corpus.models import Chunk, Document

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id TEXT PRIMARY KEY,
    source_id TEXT NOT NULL,
    title TEXT NOT NULL,
    text TEXT NOT NULL,
    source TEXT NOT NULL,
    metadata TEXT NOT NULL,
    spans TEXT,
    state TEXT NOT NULL DEFAULT 'pending'
);
CREATE INDEX IF NOT EXISTS documents_source_id ON documents(source_id);
CREATE INDEX IF NOT EXISTS documents_state ON documents(state);
CREATE TABLE IF NOT EXISTS chunks (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT NOT NULL UNIQUE,
    doc_id TEXT NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    text TEXT NOT NULL,
    vector BLOB
);
CREATE INDEX IF NOT EXISTS chunks_doc ON chunks(doc_id);
CREATE INDEX IF NOT EXISTS chunks_unembedded ON chunks(seq) WHERE vector IS NULL;
"""

STATES = ("pending", "chunked", "embedded")


class CorpusStore:
    """SQLite-backed documents and chunks with per-document build state."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if self.path.is_file() and not os.access(self.path.parent, os.W_OK):
            # read-only media (a mounted archive, a shared volume): searchable, never written
            uri = f"file:{self.path.resolve()}?immutable=1"
            self.db = sqlite3.connect(uri, uri=True, check_same_thread=False)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, check_same_thread=False)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)
        self.db.commit()

    def close(self) -> None:
        self.db.close()

    # -- documents -------------------------------------------------------------------------
    def add_documents(self, docs: Iterable[Document]) -> int:
        """Insert documents not yet stored; returns how many were new."""
        before = self.count_documents()
        self.db.executemany(
            "INSERT OR IGNORE INTO documents(id, source_id, title, text, source, metadata, spans)"
            " VALUES (?, ?, ?, ?, ?, ?, ?)",
            (
                (
                    d.id,
                    d.source_id,
                    d.title,
                    d.text,
                    d.source,
                    json.dumps(d.metadata, ensure_ascii=False, default=str),
                    json.dumps(d.spans) if d.spans is not None else None,
                )
                for d in docs
            ),
        )
        self.db.commit()
        return self.count_documents() - before

    @staticmethod
    def _doc(row: Sequence) -> Document:
        spans = json.loads(row[6]) if row[6] else None
        return Document(
            id=row[0],
            source_id=row[1],
            title=row[2],
            text=row[3],
            source=row[4],
            metadata=json.loads(row[5]),
            spans=[tuple(s) for s in spans] if spans is not None else None,
        )

    _DOC_COLS = "id, source_id, title, text, source, metadata, spans"

    def get_document(self, doc_id: str) -> Document | None:
        row = self.db.execute(
            f"SELECT {self._DOC_COLS} FROM documents WHERE id = ?", (doc_id,)
        ).fetchone()
        return self._doc(row) if row else None

    def get_documents(self, doc_ids: Sequence[str]) -> dict[str, Document]:
        out: dict[str, Document] = {}
        for i in range(0, len(doc_ids), 500):
            part = list(doc_ids[i : i + 500])
            marks = ",".join("?" * len(part))
            for row in self.db.execute(
                f"SELECT {self._DOC_COLS} FROM documents WHERE id IN ({marks})", part
            ):
                out[row[0]] = self._doc(row)
        return out

    def resolve_document_ids(self, key: str) -> list[str]:
        """Document ids whose content id or source id equals ``key``."""
        rows = self.db.execute(
            "SELECT id FROM documents WHERE id = ? OR source_id = ?", (key, key)
        ).fetchall()
        return [r[0] for r in rows]

    def iter_documents(self, state: str | None = None, batch: int = 256) -> Iterator[Document]:
        sql = f"SELECT {self._DOC_COLS} FROM documents"
        args: tuple = ()
        if state is not None:
            sql += " WHERE state = ?"
            args = (state,)
        cur = self.db.execute(sql + " ORDER BY rowid", args)
        while rows := cur.fetchmany(batch):
            yield from (self._doc(r) for r in rows)

    def list_documents(
        self, offset: int = 0, limit: int = 50, match: str = ""
    ) -> list[dict[str, object]]:
        """One page of documents (id, source id, title, state, chunk count), in the order they
        were added; with ``match``, only those whose source id, content id or title holds it
        (case-insensitive for ASCII)."""
        where, args = _matching(match)
        rows = self.db.execute(
            "SELECT d.id, d.source_id, d.title, d.state, "
            "(SELECT COUNT(*) FROM chunks c WHERE c.doc_id = d.id) "
            f"FROM documents d {where} ORDER BY d.rowid LIMIT ? OFFSET ?",
            (*args, limit, offset),
        ).fetchall()
        keys = ("id", "source_id", "title", "state", "chunks")
        return [dict(zip(keys, r, strict=True)) for r in rows]

    def count_documents(self, state: str | None = None, match: str = "") -> int:
        """How many documents (in ``state``; holding ``match`` as :meth:`list_documents`)."""
        where, args = _matching(match)
        if state is not None:
            where = f"{where} AND d.state = ?" if where else "WHERE d.state = ?"
            args = (*args, state)
        return self.db.execute(f"SELECT COUNT(*) FROM documents d {where}", args).fetchone()[0]

    def state_counts(self) -> dict[str, int]:
        rows = self.db.execute("SELECT state, COUNT(*) FROM documents GROUP BY state").fetchall()
        return {s: 0 for s in STATES} | dict(rows)

    def remove_documents(self, doc_ids: Sequence[str]) -> int:
        n = 0
        for d in doc_ids:
            self.db.execute("DELETE FROM chunks WHERE doc_id = ?", (d,))
            n += self.db.execute("DELETE FROM documents WHERE id = ?", (d,)).rowcount
        self.db.commit()
        return n

    # -- chunks ----------------------------------------------------------------------------
    def set_chunks(self, doc_chunks: Sequence[tuple[str, list[Chunk]]]) -> None:
        """Store each document's chunks (replacing earlier ones) and mark it ``chunked``."""
        with self.db:
            for doc_id, chunks in doc_chunks:
                self.db.execute("DELETE FROM chunks WHERE doc_id = ?", (doc_id,))
                self.db.executemany(
                    "INSERT INTO chunks(id, doc_id, idx, start, end, text) VALUES (?,?,?,?,?,?)",
                    [(c.id, c.doc_id, c.index, c.start, c.end, c.text) for c in chunks],
                )
                # A document without any chunk (empty text) has nothing left to embed.
                state = "chunked" if chunks else "embedded"
                self.db.execute("UPDATE documents SET state=? WHERE id = ?", (state, doc_id))

    def chunks_without_vectors(self, limit: int) -> list[tuple[int, str]]:
        return self.db.execute(
            "SELECT seq, text FROM chunks WHERE vector IS NULL ORDER BY seq LIMIT ?", (limit,)
        ).fetchall()

    def count_chunks(self, with_vectors: bool | None = None) -> int:
        """Chunks, or those with (without) a vector; counted from indexes, never by reading
        the vectors (the chunks still to embed have a partial index of their own)."""
        total = int(self.db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0])
        if with_vectors is None:
            return total
        missing = int(
            self.db.execute("SELECT COUNT(*) FROM chunks WHERE vector IS NULL").fetchone()[0]
        )
        return missing if with_vectors is False else total - missing

    def set_vectors(self, seqs: Sequence[int], vectors: np.ndarray) -> None:
        """Store a batch of chunk vectors; documents whose chunks all have one become embedded."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        with self.db:
            self.db.executemany(
                "UPDATE chunks SET vector = ? WHERE seq = ?",
                [(vectors[i].tobytes(), int(s)) for i, s in enumerate(seqs)],
            )
            if not len(seqs):
                return
            # only the documents of this batch's chunks (a batch is a run of seqs): checking
            # every chunked document on each batch made a 1M-chunk build quadratic
            self.db.execute(
                "UPDATE documents SET state='embedded' WHERE state='chunked' AND id IN"
                " (SELECT doc_id FROM chunks WHERE seq BETWEEN ? AND ?) AND NOT EXISTS"
                " (SELECT 1 FROM chunks c WHERE c.doc_id = documents.id AND c.vector IS NULL)",
                (int(min(seqs)), int(max(seqs))),
            )

    def all_chunk_texts(self) -> tuple[list[str], list[str]]:
        """(chunk ids, texts) of every chunk, in storage order."""
        ids: list[str] = []
        texts: list[str] = []
        for cid, text in self.db.execute("SELECT id, text FROM chunks ORDER BY seq"):
            ids.append(cid)
            texts.append(text)
        return ids, texts

    def all_vectors(self, dim: int) -> tuple[list[str], np.ndarray]:
        """(chunk ids, float32 matrix) of every chunk that has a vector, in storage order."""
        ids: list[str] = []
        n = self.count_chunks(with_vectors=True)
        mat = np.empty((n, dim), dtype=np.float32)
        cur = self.db.execute("SELECT id, vector FROM chunks WHERE vector IS NOT NULL ORDER BY seq")
        i = 0
        while rows := cur.fetchmany(4096):
            for cid, blob in rows:
                mat[i] = np.frombuffer(blob, dtype=np.float32)
                ids.append(cid)
                i += 1
        return ids, mat[:i]

    def chunk_rows_after(self, seq: int, limit: int) -> list[tuple[int, str, str, str, bytes]]:
        """``(seq, id, doc_id, text, vector bytes)`` of the embedded chunks stored after
        ``seq``, in storage order (what a search server has not been sent yet)."""
        return self.db.execute(
            "SELECT seq, id, doc_id, text, vector FROM chunks WHERE seq > ? AND vector IS NOT "
            "NULL ORDER BY seq LIMIT ?",
            (seq, limit),
        ).fetchall()

    def max_chunk_seq(self) -> int:
        return int(self.db.execute("SELECT COALESCE(MAX(seq), 0) FROM chunks").fetchone()[0])

    def get_chunks(self, chunk_ids: Sequence[str]) -> dict[str, Chunk]:
        out: dict[str, Chunk] = {}
        for i in range(0, len(chunk_ids), 500):
            part = list(chunk_ids[i : i + 500])
            marks = ",".join("?" * len(part))
            for row in self.db.execute(
                f"SELECT id, doc_id, idx, start, end, text FROM chunks WHERE id IN ({marks})",
                part,
            ):
                out[row[0]] = Chunk(
                    id=row[0], doc_id=row[1], index=row[2], start=row[3], end=row[4], text=row[5]
                )
        return out

    def chunks_of_documents(self, doc_ids: Sequence[str]) -> list[tuple[str, str]]:
        """``(chunk id, text)`` of every chunk of ``doc_ids``."""
        out: list[tuple[str, str]] = []
        for i in range(0, len(doc_ids), 500):
            part = list(doc_ids[i : i + 500])
            marks = ",".join("?" * len(part))
            out += self.db.execute(
                f"SELECT id, text FROM chunks WHERE doc_id IN ({marks}) ORDER BY seq", part
            ).fetchall()
        return out

    def embedded_chunk_ids(self) -> list[str]:
        """Ids of the chunks that have a vector."""
        return [r[0] for r in self.db.execute("SELECT id FROM chunks WHERE vector IS NOT NULL")]

    def chunk_doc_ids(self) -> dict[str, str]:
        return dict(self.db.execute("SELECT id, doc_id FROM chunks"))


def _matching(match: str) -> tuple[str, tuple[str, ...]]:
    """The WHERE clause (and its arguments) of documents whose ids or title hold ``match``."""
    match = match.strip()
    if not match:
        return "", ()
    like = "%" + match.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    clause = " OR ".join(f"d.{c} LIKE ? ESCAPE '\\'" for c in ("source_id", "id", "title"))
    return f"WHERE ({clause})", (like, like, like)
