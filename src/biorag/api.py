"""The library facade: one object to index a corpus, search it and ask it questions.

from biorag import BioRAG
rag = BioRAG("idx/pubmed")                       # settings from biorag.toml / BIORAG_*
rag.add(["abstracts.jsonl"])                      # incremental, resumable
rag.search("metformin cardiovascular", k=5)      # passages with their sources
rag.ask("Does metformin ...?", options={"A": "yes", "B": "no"})
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from biorag.config import Settings, load_settings
from biorag.methods.base import Answer, Question, Runtime


class BioRAG:
    """An index directory plus the settings and models to use it."""

    def __init__(self, index: str | Path, settings: Settings | None = None):
        self.index = Path(index)
        self.settings = settings or load_settings()
        self.runtime = Runtime(self.settings, [self.index])

    def add(self, paths: list[str | Path], fmt: str = "auto") -> dict[str, Any]:
        """Add corpus files (see ``biorag.corpus.loaders``); returns the build report."""
        from biorag.corpus.loaders import load_corpora
        from biorag.retrieve.index import IndexDir

        self._reset_searcher()
        idx = IndexDir(
            self.index, self.runtime.embedder, self.settings.chunking, self.settings.retrieval
        )
        try:
            return idx.add(load_corpora([Path(p) for p in paths], fmt)).to_dict()
        finally:
            idx.close()

    def remove(self, doc_ids: list[str]) -> dict[str, Any]:
        """Delete documents by content id or source id (PMID)."""
        from biorag.retrieve.index import IndexDir

        self._reset_searcher()
        idx = IndexDir(self.index, self.runtime.embedder, retrieval=self.settings.retrieval)
        try:
            return idx.remove(doc_ids).to_dict()
        finally:
            idx.close()

    def search(
        self, query: str, k: int = 10, retriever: str | None = None, level: str = "chunk"
    ) -> list[dict[str, Any]]:
        retriever = retriever or self.settings.retrieval.retriever
        return [p.to_dict() for p in self.runtime.searcher.search([query], k, retriever, level)[0]]

    def ask(
        self,
        question: str,
        options: dict[str, str] | None = None,
        method: str = "retrieve-read",
        **method_options: Any,
    ) -> Answer:
        from biorag.methods.registry import build_method

        qa = build_method(method, self.runtime, method_options)
        return asyncio.run(qa.answer(Question(text=question, options=options or {})))

    def accounting(self) -> dict[str, Any]:
        return self.runtime.accounting()

    def _reset_searcher(self) -> None:
        searcher = self.runtime.__dict__.pop("searcher", None)
        if searcher is not None:
            searcher.close()

    def close(self) -> None:
        """Close the searcher and the second models methods built (IP-RAR's reasoning model:
        one per distinct ``reasoning_model``, shared by every :meth:`ask`)."""
        self.runtime.close()

    def __enter__(self) -> BioRAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
