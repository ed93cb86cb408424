"""Documents and chunks: the records every stage passes around.

A document's id is a hash of its source id and content (title and text), so loading the same
document twice is a no-op and an index build can be resumed, while two records that share a
text under different source ids (a snippet cited for two PMIDs) stay two documents. Its
``source_id`` is the id the world knows it by (a PMID, a file name). A chunk points back into
its document's ``text`` by character offsets.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field


def content_id(*parts: str, prefix: str = "d", length: int = 16) -> str:
    """A stable id from content: ``prefix`` + the first ``length`` hex digits of a SHA-256."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\x1f")
    return f"{prefix}{h.hexdigest()[:length]}"


class Document(BaseModel):
    """One document of a corpus.

    ``spans`` optionally fixes the chunking: character ranges of ``text`` that are the chunks
    (BioASQ gold snippets, MedRAG snippets, PubMedQA context sections). When it is None the
    chunker decides.
    """

    id: str
    source_id: str
    title: str = ""
    text: str
    source: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
    spans: list[tuple[int, int]] | None = None

    @classmethod
    def create(
        cls,
        *,
        source_id: str,
        text: str,
        title: str = "",
        source: str = "",
        metadata: dict[str, Any] | None = None,
        spans: list[tuple[int, int]] | None = None,
    ) -> Document:
        return cls(
            id=content_id(str(source_id), title, text),
            source_id=str(source_id),
            title=title,
            text=text,
            source=source,
            metadata=metadata or {},
            spans=spans,
        )


class Chunk(BaseModel):
    """A passage of a document: ``text == document.text[start:end]``."""

    id: str
    doc_id: str
    index: int
    start: int
    end: int
    text: str

    @staticmethod
    def make_id(doc_id: str, start: int, end: int) -> str:
        return f"{doc_id}:{start}-{end}"


@dataclass
class SkippedRecord:
    """A record a loader could not use: where it was and why."""

    file: str
    line: int | None
    reason: str

    def where(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file


@dataclass
class LoadReport:
    """What a loader read: the documents, plus every record it skipped and where."""

    documents: list[Document] = field(default_factory=list)
    skipped: list[SkippedRecord] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def extend(self, other: LoadReport) -> None:
        self.documents.extend(other.documents)
        self.skipped.extend(other.skipped)
        self.files.extend(other.files)

    def summary(self) -> dict[str, Any]:
        return {
            "files": len(self.files),
            "documents": len(self.documents),
            "skipped": len(self.skipped),
            "skipped_examples": [f"{s.where()}: {s.reason}" for s in self.skipped[:20]],
        }
