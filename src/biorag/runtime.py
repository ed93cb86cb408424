"""The runtime: the typed container of the components QA methods use.

A :class:`Runtime` is built once from :class:`~biorag.config.Settings` (and the index
directories to search). Each component is made from the settings on first use, once, under a
lock, or given ready-made to the constructor (a test's embedder, a caller's LLM)::

    with Runtime(settings, [Path("idx")]) as rt:          # or ``async with`` inside a loop
        answer = await build_method("claims", rt).answer(question)

It is safe to share between concurrent requests: components are built under one lock, the
searcher serializes its searches itself, and :meth:`for_question` gives each request a child
runtime with an LLM client of its own (its own accounting) over the shared components. Every
LLM client, the runtime's own and each child's, is a client of one
:class:`~biorag.llm.shared.SharedLLM` (one backend behind one concurrency limit, one cache),
composed by :func:`~biorag.llm.factory.client_of`: every door gets the same chain. Closing the
runtime closes what it built (the searcher, the LLM and the LLM variants) and refuses later
use; a child closes nothing.

This is the composition root: the stage packages and the methods take their components from
here, never build them themselves.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from biorag.config import Settings
from biorag.errors import BioragError
from biorag.llm.accounting import Accounting
from biorag.llm.shared import SharedLLM, settings_key, variant_settings

if TYPE_CHECKING:
    from biorag.embed.base import Embedder
    from biorag.embed.rerank import Reranker
    from biorag.llm.factory import LLM
    from biorag.retrieve.exclusion import DocExclusion
    from biorag.retrieve.search import MultiSearcher

__all__ = ["Runtime"]

_UNBUILT: Any = object()


class Runtime:
    """The LLM, embedder, searcher and reranker a method uses, and the LLM variants methods ask
    for (:meth:`llm_variant`); a context manager, sync or async."""

    def __init__(
        self,
        settings: Settings,
        index_paths: list[Path] | None = None,
        *,
        llm: LLM | None = _UNBUILT,
        shared_llm: SharedLLM | None = None,
        embedder: Embedder | None = None,
        reranker: Reranker | None = None,
        searcher: MultiSearcher | None = None,
    ) -> None:
        self.settings = settings
        self.index_paths = [Path(p) for p in (index_paths or [])]
        self._llm: LLM | None = llm
        self._shared: SharedLLM | None = shared_llm
        self._owns_shared = shared_llm is None
        self._embedder = embedder
        self._embedder2: Embedder | None = None
        self._reranker = reranker
        self._searcher = searcher
        self._variants: dict[str, SharedLLM] = {}
        self._accounting: Accounting = (
            Accounting() if llm is None or llm is _UNBUILT else llm.accounting
        )
        self._parent: Runtime | None = None
        self._exclusion: DocExclusion | None = None
        self._owns_llm = llm is _UNBUILT
        self._owns_embedder = embedder is None
        self._lock = threading.RLock()  # reentrant: the reranker builds the embedder
        self._closed = False

    # -- components --------------------------------------------------------------------------
    @property
    def llm(self) -> LLM | None:
        """The configured chat model (None for ``llm.backend = "none"``: the no-LLM floor)."""
        with self._lock:
            self._check_open()
            if self._llm is _UNBUILT:
                self._llm = self.shared_llm.client(self._accounting)
            return self._llm

    @property
    def shared_llm(self) -> SharedLLM:
        """The backend, concurrency limit and cache every LLM client of this runtime (and of its
        children) goes through; built from ``[llm]`` on first use."""
        if self._shared is None and self._parent is not None:
            return self._parent.shared_llm
        with self._lock:
            self._check_open()
            if self._shared is None:
                self._shared = SharedLLM(self.settings)
            return self._shared

    def client(self, accounting: Accounting) -> LLM | None:
        """An LLM client with ``accounting`` of its own (None without an LLM); for a runtime
        given a ready-made ``llm`` (a test's), one like it over the same backend."""
        if self._shared is None and self._parent is not None:
            return self._parent.client(accounting)
        if not self._owns_llm and self._shared is None:
            llm = self.llm
            return llm.with_accounting(accounting) if llm is not None else None
        return self.shared_llm.client(accounting)

    def using_llm(self, shared: SharedLLM) -> Runtime:
        """This runtime with its LLM clients drawn from ``shared`` (a test's backend, say): the
        same embedder, searcher and reranker; closing it closes nothing."""
        view = Runtime(self.settings, self.index_paths, shared_llm=shared)
        view._parent = self
        return view

    def record(self, accounting: Accounting) -> None:
        """Add one request's LLM use to this runtime's accounting (:meth:`accounting`)."""
        root = self._parent or self
        with root._lock:
            if accounting is not root._accounting:
                root._accounting.merge(accounting)

    @property
    def embedder(self) -> Embedder:
        if self._parent is not None:
            return self._parent.embedder
        with self._lock:
            self._check_open()
            if self._embedder is None:
                from biorag.embed.factory import build_embedder

                s = self.settings
                cache = s.embed_cache_dir() if s.embed.cache else None
                self._embedder = build_embedder(s.embed, cache)
            return self._embedder

    def _second_embedder(self) -> Embedder:
        """The encoder ``retrieval.second_encoder`` names, with ``[embed]``'s other settings
        and cache (built on the first search that fuses it)."""
        if self._parent is not None:
            return self._parent._second_embedder()
        with self._lock:
            self._check_open()
            if self._embedder2 is None:
                from biorag.embed.factory import build_embedder

                s = self.settings
                model = s.retrieval.second_encoder or s.embed.model
                conf = s.embed.model_copy(
                    update={"model": model, "backend": "sentence-transformers"}
                )
                self._embedder2 = build_embedder(
                    conf, s.embed_cache_dir() if s.embed.cache else None
                )
            return self._embedder2

    @property
    def searcher(self) -> MultiSearcher:
        """The indexes of ``index_paths``, searched together (built on first use); a child
        given an exclusion (:meth:`for_question`) searches them without its documents."""
        if self._parent is not None:
            if self._exclusion is None:
                return self._parent.searcher
            from biorag.retrieve.exclusion import CombinedExclusion, ExcludingSearcher, Exclusion

            inner = self._parent.searcher
            exclusion: Exclusion = self._exclusion
            if isinstance(inner, ExcludingSearcher):  # the parent's exclusion holds too
                exclusion = CombinedExclusion(inner.exclusion, exclusion)
                inner = inner.inner
            # a view typed as what it stands for: every method searches through it unaware
            return cast("MultiSearcher", ExcludingSearcher(inner, exclusion))
        with self._lock:
            self._check_open()
            if self._searcher is None:
                from biorag.retrieve.search import MultiSearcher, Searcher

                if not self.index_paths:
                    raise BioragError("no index directory was given to search", param="index")
                retrieval = self.settings.retrieval
                self._searcher = MultiSearcher(
                    [
                        Searcher(
                            p,
                            lambda: self.embedder,
                            retrieval,
                            self.settings.index,
                            self._second_embedder,
                        )
                        for p in self.index_paths
                    ]
                )
            return self._searcher

    @property
    def reranker(self) -> Reranker:
        with self._lock:
            self._check_open()
            if self._reranker is None:
                if self._parent is not None and self.settings.rerank.backend != "llm":
                    return self._parent.reranker
                # An LLM reranker's calls count in this runtime's own accounting.
                from biorag.embed.rerank import build_reranker

                self._reranker = build_reranker(self.settings.rerank, self.embedder, self.llm)
            return self._reranker

    def built(self) -> set[str]:
        """The components made or given so far (``llm``, ``embedder``, ``searcher``,
        ``reranker``): what a method's first use opened, and what it did not."""
        made = {
            "llm": self._llm is not _UNBUILT,
            "embedder": self._embedder is not None,
            "searcher": self._searcher is not None,
            "reranker": self._reranker is not None,
        }
        return {name for name, yes in made.items() if yes}

    @property
    def open_llm_variants(self) -> int:
        """How many LLM variants are built and not yet closed."""
        return len(self._variants) if self._parent is None else self._parent.open_llm_variants

    def reload_searcher(self) -> None:
        """Open the indexes again (after a job changed them) and swap the new searcher in.

        Requests that hold the old searcher finish on it: it is not closed but dropped, and
        freed (its stores closed) when the last of them lets go."""
        from biorag.retrieve.search import MultiSearcher, Searcher

        if self._parent is not None:
            raise BioragError("reload the searcher on the runtime that owns it, not a child")
        self._check_open()
        retrieval = self.settings.retrieval
        fresh = MultiSearcher(
            [
                Searcher(
                    p, lambda: self.embedder, retrieval, self.settings.index, self._second_embedder
                )
                for p in self.index_paths
            ]
        )
        with self._lock:
            if self._closed:
                fresh.close()
            self._check_open()
            self._searcher = fresh

    def reset_searcher(self) -> None:
        """Close the searcher; the next search reopens the indexes (after they changed)."""
        with self._lock:
            searcher, self._searcher = self._searcher, None
        if searcher is not None:
            searcher.close()

    # -- per-request children ------------------------------------------------------------------
    def for_question(
        self, accounting: Accounting, exclusion: DocExclusion | None = None
    ) -> Runtime:
        """A child runtime for one request: an LLM client of its own counting into
        ``accounting`` (:meth:`client`), everything else shared with this runtime; its searches
        leave out the documents of ``exclusion`` (and count them). Closing it closes nothing."""
        child = Runtime(self.settings, self.index_paths, llm=self.client(accounting))
        child._parent = self
        child._exclusion = exclusion
        child._owns_llm = child._owns_shared = False
        return child

    # -- LLM variants --------------------------------------------------------------------------
    def shared_llm_variant(self, overrides: dict[str, Any]) -> SharedLLM:
        """The :class:`~biorag.llm.shared.SharedLLM` of ``[llm]`` updated with ``overrides``:
        built on first use, then the same one for every equal (validated) override set.
        Thread-safe; raises :class:`BioragError` for bad overrides."""
        if self._parent is not None:
            return self._parent.shared_llm_variant(overrides)
        settings = variant_settings(self.settings, overrides)
        key = settings_key(settings.llm)
        with self._lock:
            self._check_open()
            shared = self._variants.get(key)
            if shared is None:
                shared = self._variants[key] = SharedLLM(settings)
        return shared

    def llm_variant(self, overrides: dict[str, Any]) -> LLM | None:
        """A client of the shared LLM that ``overrides`` make of ``[llm]`` (None when that is
        ``backend = "none"``), whose calls count in this runtime's LLM accounting."""
        shared = self.shared_llm_variant(overrides)
        llm = self.llm
        if llm is not None:
            return shared.client(llm.accounting)
        return shared.client(Accounting())

    def accounting(self) -> dict[str, Any]:
        """This runtime's LLM calls and tokens per stage (``{}`` without an LLM), also after
        the LLM was closed."""
        root = self._parent or self
        if root._llm is None or (root._llm is _UNBUILT and self.settings.llm.backend == "none"):
            return {}
        return self._accounting.report()

    # -- closing -------------------------------------------------------------------------------
    def _check_open(self) -> None:
        if self._closed:
            raise BioragError("this runtime is closed; build a new one")

    def _take_llms(self) -> tuple[list[SharedLLM], LLM | None]:
        """The LLM variants and the LLM this runtime built, forgotten (later use rebuilds)."""
        with self._lock:
            shared = list(self._variants.values())
            self._variants.clear()
            llm = self._llm if self._owns_llm and self._llm is not _UNBUILT else None
            if self._owns_llm:
                self._llm = _UNBUILT
            if self._owns_shared and self._shared is not None:
                shared.append(self._shared)
                self._shared = None
        return shared, llm

    async def aclose_llms(self) -> None:
        """Close the LLM and every LLM variant this runtime built, on the running loop (an HTTP
        client belongs to the loop that made it); later use rebuilds them."""
        if self._parent is not None:
            return
        shared, llm = self._take_llms()
        if llm is not None:
            await llm.aclose()
            llm.close()
        for s in shared:
            await s.aclose()

    async def aclose(self) -> None:
        """Close what this runtime built: LLMs (on this loop), then the searcher and the
        embedder (its cache, its HTTP client)."""
        if self._mark_closed():
            await self.aclose_llms()
            self._close_retrieval()

    def close(self) -> None:
        """Close what this runtime built, from synchronous code (the LLM variants on a loop of
        their own, in a thread when a loop is running)."""
        if not self._mark_closed():
            return
        shared, llm = self._take_llms()
        if llm is not None:
            llm.close()
        if shared:
            _run_to_end(_aclose_all(shared))
        self._close_retrieval()

    def _mark_closed(self) -> bool:
        """Refuse new use from now on; whether this call is the one that closes (a child, or a
        runtime closed before, has nothing to close)."""
        with self._lock:
            first = not self._closed
            self._closed = True
        return first and self._parent is None

    def _close_retrieval(self) -> None:
        self.reset_searcher()
        with self._lock:
            embedder, self._embedder = self._embedder, None
        closer = getattr(embedder, "close", None) if self._owns_embedder else None
        if closer is not None:
            closer()

    def __enter__(self) -> Runtime:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def _aclose_all(shared: list[SharedLLM]) -> None:
    for s in shared:
        await s.aclose()


def _run_to_end(coro: Any) -> None:
    """Run ``coro`` to its end from synchronous code, in a thread when a loop is running."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return
    worker = threading.Thread(target=asyncio.run, args=(coro,))
    worker.start()
    worker.join()
