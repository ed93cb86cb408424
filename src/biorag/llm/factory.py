"""The composed client :class:`LLM` and :func:`build_llm`, which makes one from settings."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from concurrent.futures import Future
from typing import Any, TypeVar

from biorag.config import Settings
from biorag.errors import ConfigError
from biorag.llm.accounting import Accounting
from biorag.llm.base import LLMBackend
from biorag.llm.cache import SQLiteCache
from biorag.llm.context import ContextFitMiddleware
from biorag.llm.dry_run import dry_run_responder
from biorag.llm.endpoints import EndpointPool
from biorag.llm.middleware import (
    AccountingMiddleware,
    CacheMiddleware,
    ConcurrencyLimit,
    RetryMiddleware,
)
from biorag.llm.mock_backend import MockBackend
from biorag.llm.openai.backend import OpenAIBackend
from biorag.llm.openai.server_info import ServerRegistry
from biorag.llm.types import ChatRequest, ChatResponse

T = TypeVar("T")

_JSON_RETRY = (
    "Your answer could not be parsed as JSON ({error}). "
    "Answer again with only the JSON value, no other text."
)


class LLM:
    """A backend wrapped in cache -> context fit -> retry -> concurrency limit -> accounting.

    ``chat`` is the async entry point; ``chat_sync`` runs it from synchronous code (on a private
    event loop thread, so HTTP connections are reused between calls); ``chat_many`` answers
    several requests concurrently within the limit. ``accounting`` holds the per-stage counts.
    Requests without ``max_tokens`` / ``temperature`` get the configured defaults; an explicit
    ``max_tokens`` (an operator's budget) is multiplied by ``budget_scale``.
    """

    def __init__(
        self,
        backend: LLMBackend,
        *,
        accounting: Accounting | None = None,
        cache: SQLiteCache | None = None,
        max_retries: int = 4,
        concurrency: int = 8,
        max_tokens: int = 512,
        temperature: float = 0.0,
        budget_scale: float = 1.0,
        retry_base_delay: float = 0.5,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.backend = backend
        self._retry = (max_retries, retry_base_delay, sleep)  # for with_accounting
        self.accounting = accounting if accounting is not None else Accounting()
        self.cache = cache
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.budget_scale = budget_scale
        self.concurrency = concurrency  # requests in flight at most
        chain: LLMBackend = AccountingMiddleware(backend, self.accounting)
        chain = ConcurrencyLimit(chain, concurrency)
        chain = RetryMiddleware(chain, max_retries, base_delay=retry_base_delay, sleep=sleep)
        if hasattr(backend, "context_window"):  # a wrapper passes its backend's through
            chain = ContextFitMiddleware(chain, backend)
        if cache is not None:
            chain = CacheMiddleware(chain, cache, self.accounting)
        self.chain = chain
        self._bg_loop: asyncio.AbstractEventLoop | None = None
        self._bg_thread: threading.Thread | None = None
        self._bg_lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.backend.name

    @property
    def model(self) -> str:
        return self.backend.model

    def __repr__(self) -> str:
        return f"LLM(backend={self.backend!r}, cache={self.cache!r})"

    def with_accounting(self, accounting: Accounting) -> LLM:
        """A client like this one (the same backend, cache and settings, so the same chain)
        whose calls count in ``accounting``."""
        max_retries, retry_base_delay, sleep = self._retry
        return LLM(
            self.backend,
            accounting=accounting,
            cache=self.cache,
            max_retries=max_retries,
            concurrency=self.concurrency,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            budget_scale=self.budget_scale,
            retry_base_delay=retry_base_delay,
            sleep=sleep,
        )

    def chain_names(self) -> list[str]:
        """The layers a request passes, outermost first, down to the bare backend (what every
        door's client is checked against)."""
        names: list[str] = []
        layer: Any = self.chain
        while layer is not None:
            names.append(type(layer).__name__)
            layer = getattr(layer, "inner", None)
        return names

    def _with_defaults(self, req: ChatRequest) -> ChatRequest:
        update: dict[str, Any] = {}
        if req.max_tokens is None:
            update["max_tokens"] = self.max_tokens
        elif self.budget_scale != 1.0:
            update["max_tokens"] = max(1, round(req.max_tokens * self.budget_scale))
        if req.temperature is None:
            update["temperature"] = self.temperature
        return req.model_copy(update=update) if update else req

    async def chat(self, req: ChatRequest) -> ChatResponse:
        """Answer one request; raises :class:`~biorag.errors.LLMError` when it fails for good."""
        req = self._with_defaults(req)
        try:
            return await self.chain.chat(req)
        except Exception:
            self.accounting.record_failure(req.stage)
            raise

    async def chat_many(self, reqs: Sequence[ChatRequest]) -> list[ChatResponse]:
        """Answer all requests concurrently (at most ``concurrency`` in flight), in order."""
        return list(await asyncio.gather(*(self.chat(r) for r in reqs)))

    async def chat_json(self, req: ChatRequest, retries: int = 1) -> ChatResponse:
        """Like :meth:`chat` for a JSON request, re-asking up to ``retries`` times when the
        answer does not parse (the model sees its answer and the parse error)."""
        resp = await self.chat(req)
        for _ in range(retries):
            if resp.parse_error is None or req.json_schema is None:
                break
            messages = [
                *req.messages,
                {"role": "assistant", "content": resp.text},
                {"role": "user", "content": _JSON_RETRY.format(error=resp.parse_error)},
            ]
            resp = await self.chat(req.model_copy(update={"messages": messages}))
        return resp

    def _loop(self) -> asyncio.AbstractEventLoop:
        with self._bg_lock:
            if self._bg_loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(
                    target=loop.run_forever, name="biorag-llm-loop", daemon=True
                )
                thread.start()
                self._bg_loop, self._bg_thread = loop, thread
            return self._bg_loop

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on this client's private event loop and wait for its result."""
        loop = self._loop()
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            coro.close()
            raise RuntimeError("chat_sync called from inside the LLM's own loop; await chat()")
        fut: Future[T] = asyncio.run_coroutine_threadsafe(coro, loop)
        return fut.result()

    def chat_sync(self, req: ChatRequest) -> ChatResponse:
        """Synchronous :meth:`chat` (for scripts and sync code; blocks the calling thread)."""
        return self.run_sync(self.chat(req))

    def chat_many_sync(self, reqs: Sequence[ChatRequest]) -> list[ChatResponse]:
        """Synchronous :meth:`chat_many`."""
        return self.run_sync(self.chat_many(reqs))

    async def aclose(self) -> None:
        """Close the backend's resources bound to the running event loop."""
        closer = getattr(self.backend, "aclose", None)
        if closer is not None:
            await closer()

    def close(self) -> None:
        """Release everything: the private loop (and its HTTP client) and the cache."""
        with self._bg_lock:
            loop, thread = self._bg_loop, self._bg_thread
            self._bg_loop = self._bg_thread = None
        if loop is not None and thread is not None:
            asyncio.run_coroutine_threadsafe(self.aclose(), loop).result()
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> LLM:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def make_backend(settings: Settings) -> LLMBackend | None:
    """The bare backend selected by ``settings.llm`` (None for ``backend = "none"``)."""
    cfg = settings.llm
    if cfg.backend == "none":
        return None
    if cfg.backend == "openai":
        assert cfg.base_url and cfg.model  # checked by LLMSettings
        registry = ServerRegistry(settings.home_path / "llm_servers.json")
        backends = [
            OpenAIBackend(
                url,
                cfg.model,
                api_key_env=cfg.api_key_env,
                timeout_s=cfg.timeout_s,
                structured_output=cfg.structured_output,
                connect_timeout_s=cfg.connect_timeout_s,
                timeout_per_token_s=cfg.timeout_per_token_s,
                context_window=cfg.context_window,
                registry=registry,
                stop_loops=cfg.stop_loops,
            )
            for url in cfg.base_urls()
        ]
        if len(backends) == 1:
            return backends[0]
        return EndpointPool(backends, per_endpoint=cfg.endpoint_concurrency)
    if cfg.backend == "hf":
        from biorag.llm.hf_backend import HFBackend

        assert cfg.hf_path
        return HFBackend(
            cfg.hf_path,
            model=cfg.model,
            load_in_4bit=cfg.load_in_4bit,
            gguf_cache_dir=settings.home_path / "hf_from_gguf",
            stop_loops=cfg.stop_loops != "off",
        )
    if cfg.backend == "mock":
        if not cfg.mock_script:
            raise ConfigError(
                "backend 'mock' needs llm.mock_script (a JSON/JSONL rule file, or 'dry-run')"
            )
        if cfg.mock_script == "dry-run":
            return MockBackend(responder=dry_run_responder, model=cfg.model or "dry-run")
        return MockBackend.from_file(cfg.mock_script, model=cfg.model)
    raise ConfigError(f"unknown llm.backend {cfg.backend!r}")


def client_of(
    settings: Settings,
    backend: LLMBackend,
    *,
    accounting: Accounting | None = None,
    cache: SQLiteCache | None = None,
    retry_base_delay: float = 0.5,
) -> LLM:
    """The one place an LLM client is composed, for every door: :func:`build_llm` (the CLI's
    ``ask``, scripts) and :meth:`~biorag.llm.shared.SharedLLM.client` (the service, eval, the
    judges, the batch workers) both come here, so each gets the same chain with the same
    settings."""
    cfg = settings.llm
    return LLM(
        backend,
        accounting=accounting,
        cache=cache,
        max_retries=cfg.max_retries,
        concurrency=cfg.concurrency,
        max_tokens=cfg.max_tokens,
        temperature=cfg.temperature,
        budget_scale=cfg.budget_scale,
        retry_base_delay=retry_base_delay,
    )


def build_llm(
    settings: Settings,
    *,
    backend: LLMBackend | None = None,
    accounting: Accounting | None = None,
    retry_base_delay: float = 0.5,
) -> LLM | None:
    """The composed client for ``settings`` (None when ``llm.backend = "none"``).

    ``backend`` replaces the configured one (tests); ``accounting`` shares counters with other
    clients; ``retry_base_delay`` is the first backoff step in seconds. The cache lives at
    ``settings.llm_cache_path()`` when ``llm.cache`` is on.
    """
    if backend is None:
        backend = make_backend(settings)
        if backend is None:
            return None
    cache = SQLiteCache(settings.llm_cache_path()) if settings.llm.cache else None
    return client_of(
        settings, backend, accounting=accounting, cache=cache, retry_base_delay=retry_base_delay
    )
