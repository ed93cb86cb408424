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

from biorag.asking import ask
from biorag.config import Settings, load_settings
from biorag.errors import require_question
from biorag.methods.base import Answer, Question
from biorag.runtime import Runtime


class BioRAG:
    """An index directory plus the settings and models to use it."""

    def __init__(
        self, index: str | Path, settings: Settings | None = None, runtime: Runtime | None = None
    ):
        """``runtime``: the components to use (e.g. one made with an embedder of the caller's);
        by default one built from ``settings``. Either way :meth:`close` closes it."""
        self.index = Path(index)
        self.settings = runtime.settings if runtime is not None else settings or load_settings()
        self.runtime = runtime if runtime is not None else Runtime(self.settings, [self.index])
        if not self.runtime.index_paths:
            self.runtime.index_paths = [self.index]
        # One event loop for every ask: HTTP clients are bound to the loop that made them, so
        # the LLMs' clients are reused across questions and closed on that loop by close().
        self._loop: asyncio.Runner | None = None

    def _run(self, coro: Any) -> Any:
        if self._loop is None:
            self._loop = asyncio.Runner()
        return self._loop.run(coro)

    def add(self, paths: list[str | Path], fmt: str = "auto") -> dict[str, Any]:
        """Add corpus files (see ``biorag.corpus.loaders``); returns the build report."""
        from biorag.corpus.loaders import load_corpora
        from biorag.executor import build_executor
        from biorag.retrieve.index import IndexDir

        self.runtime.reset_searcher()
        executor = build_executor(self.settings.executor)  # [executor] kind = "ray": embed there
        try:
            with IndexDir(
                self.index,
                self.runtime.embedder,
                self.settings.chunking,
                self.settings.retrieval,
                index=self.settings.index,
                executor=executor,
                embed_settings=self.settings.embed,
            ) as idx:
                return idx.add(load_corpora([Path(p) for p in paths], fmt)).to_dict()
        finally:
            executor.close()

    def remove(self, doc_ids: list[str]) -> dict[str, Any]:
        """Delete documents by content id or source id (PMID)."""
        from biorag.retrieve.index import IndexDir

        self.runtime.reset_searcher()
        with IndexDir(
            self.index,
            self.runtime.embedder,
            retrieval=self.settings.retrieval,
            index=self.settings.index,
        ) as idx:
            return idx.remove(doc_ids).to_dict()

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
        """Answer ``question`` (through :func:`biorag.asking.ask`, as every door does);
        :class:`~biorag.errors.InputError` when it is empty, a one-line
        :class:`~biorag.errors.BioragError` for an unknown method or option."""
        question = require_question(question, "BioRAG.ask: question", 'rag.ask("Does ...?")')
        q = Question(text=question, options=options or {})
        answer: Answer = self._run(ask(self.runtime, q, method, method_options))
        return answer

    def accounting(self) -> dict[str, Any]:
        """The LLM's calls, cache hits, tokens and latency per stage over every :meth:`ask`, and
        ``wall_s``, their summed wall-clock seconds (``{}`` without an LLM)."""
        return self.runtime.accounting()

    def close(self) -> None:
        """Close the runtime: its LLMs (the main one and the second models methods built, e.g.
        IP-RAR's reasoning model, one per distinct ``reasoning_model``, shared by every
        :meth:`ask`) on the loop that used them, then the searcher."""
        if self._loop is not None:
            self._run(self.runtime.aclose())
            self._loop.close()
            self._loop = None
        self.runtime.close()

    def __enter__(self) -> BioRAG:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
