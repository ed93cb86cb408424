"""Corpus: documents, chunks, loaders, benchmark dataset readers, sentence splitting, chunking and
the SQLite store."""

from biorag.corpus.models import Chunk, Document, LoadReport, SkippedRecord, content_id

__all__ = ["Chunk", "Document", "LoadReport", "SkippedRecord", "content_id"]
