"""Shared components for the evaluation runner, and one runtime per (method, question).

:class:`~biorag.llm.shared.SharedLLM` (re-exported here) holds one LLM backend (behind one
concurrency limit) and one cache; each (method, question) gets its own client over it, with its
own :class:`~biorag.llm.accounting.Accounting`, so every prediction record carries that
question's calls and tokens per stage even though questions are answered concurrently.
:class:`QuestionRuntime` gives that client to a method and shares everything heavy (embedder,
searcher, reranker, the LLM variants of :meth:`~biorag.methods.base.Runtime.llm_variant`) of a
base :class:`~biorag.methods.base.Runtime`, built once under a lock.
"""

from __future__ import annotations

import threading
from functools import cached_property
from typing import Any

from biorag.llm.shared import SharedLLM
from biorag.methods.base import Runtime

__all__ = ["LockedSearcher", "QuestionRuntime", "SharedLLM"]


class LockedSearcher:
    """Serialises searches on a shared searcher (its SQLite store is shared between threads)."""

    def __init__(self, inner: Any, lock: threading.Lock) -> None:
        self._inner = inner
        self._lock = lock

    def search(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return self._inner.search(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class QuestionRuntime(Runtime):
    """A runtime for one (method, question): its own LLM client, the shared everything else."""

    def __init__(self, base: Runtime, llm: Any | None, locks: dict[str, threading.Lock]) -> None:
        self.settings = base.settings
        self.index_paths = base.index_paths
        self._base = base
        self._llm = llm
        self._locks = locks

    def _shared(self, name: str) -> Any:
        # Built once, under a lock: questions run concurrently and may ask at the same moment.
        with self._locks["build"]:
            return getattr(self._base, name)

    @property
    def llm(self) -> Any | None:
        return self._llm

    @property
    def embedder(self) -> Any:
        return self._shared("embedder")

    @property
    def searcher(self) -> Any:
        return LockedSearcher(self._shared("searcher"), self._locks["search"])

    @cached_property
    def reranker(self) -> Any:
        if self.settings.rerank.backend == "llm":
            # The LLM reranker's calls belong to this question's accounting.
            from biorag.embed.rerank import build_reranker

            return build_reranker(self.settings.rerank, self.embedder, self._llm)
        return self._shared("reranker")

    def llm_variant(self, overrides: dict[str, Any]) -> Any | None:
        """The base runtime's shared variant (built once, under the build lock), as a client
        whose calls count in this question's accounting."""
        with self._locks["build"]:
            shared = self._base.shared_llm_variant(overrides)
        return shared.client(self._variant_accounting())

    def _variant_accounting(self) -> Any:
        if self._llm is not None:
            return self._llm.accounting
        from biorag.llm.accounting import Accounting

        return Accounting()

    def accounting(self) -> dict[str, Any]:
        return self._llm.accounting.report() if self._llm is not None else {}

    def close(self) -> None:  # the shared parts are closed by the runner
        pass
