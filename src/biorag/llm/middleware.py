"""Wrappers around a backend, each implementing :class:`~biorag.llm.base.LLMBackend`.

The factory composes them in this fixed order (outermost first)::

    CacheMiddleware -> RetryMiddleware -> ConcurrencyLimit -> AccountingMiddleware -> backend

so a cache hit costs nothing, each retry waits for a concurrency slot again, and accounting
sees every backend attempt. Cache hits are recorded into the same accounting by the cache.
"""

from __future__ import annotations

import asyncio
import logging
import random
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from biorag.errors import LLMError, LLMUnavailableError
from biorag.llm.accounting import Accounting
from biorag.llm.base import LLMBackend, RetryableLLMError, attach_parsed
from biorag.llm.cache import SQLiteCache, cache_key
from biorag.llm.types import ChatRequest, ChatResponse, TokenLogprob

log = logging.getLogger("biorag.llm")


#: what a backend may know of its context window, passed through every wrapper (absent where
#: the wrapped backend has none, so ``hasattr`` tells as it would on the backend itself)
WINDOW_ATTRS = frozenset({"context_window", "count_tokens"})


class _Wrapper:
    """Passes ``name`` and ``model`` through from the wrapped backend, and its window and token
    counter (:data:`WINDOW_ATTRS`), so a wrapped backend is fitted to as the bare one."""

    def __init__(self, inner: LLMBackend) -> None:
        self.inner = inner

    def __getattr__(self, attr: str) -> Any:
        if attr in WINDOW_ATTRS:
            return getattr(self.inner, attr)
        raise AttributeError(attr)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def model(self) -> str:
        return self.inner.model

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.inner!r})"


class CacheMiddleware(_Wrapper):
    """Answers repeated requests from a :class:`SQLiteCache`.

    Only successful answers are stored, and for JSON requests only answers that parsed, so a
    retry after a malformed answer reaches the model again. Backends with ``cacheable = False``
    (a mock with a callable responder) bypass the cache. The key names the model by the
    backend's ``cache_identity()`` when it has one (computed once, in a worker thread), else
    by ``model``.
    """

    def __init__(self, inner: LLMBackend, cache: SQLiteCache, accounting: Accounting) -> None:
        super().__init__(inner)
        self.cache = cache
        self.accounting = accounting
        self._identity: str | None = None

    async def identity(self) -> str:
        """The model's name in cache keys: the backend's ``cache_identity()``, else ``model``."""
        get = getattr(self._backend(), "cache_identity", None)
        if not callable(get):
            return self.model
        if self._identity is None:
            self._identity = str(await asyncio.to_thread(get))
        return self._identity

    async def chat(self, req: ChatRequest) -> ChatResponse:
        if not getattr(self._backend(), "cacheable", True):
            return await self.inner.chat(req)
        key = cache_key(self.name, await self.identity(), req)
        hit = await self.cache.aget(key)
        if hit is not None:
            logprobs = hit.get("logprobs")
            resp = ChatResponse(
                text=hit["text"],
                prompt_tokens=hit.get("prompt_tokens", 0),
                completion_tokens=hit.get("completion_tokens", 0),
                latency_s=0.0,
                cache_hit=True,
                logprobs=[TokenLogprob(**t) for t in logprobs] if logprobs is not None else None,
                model=hit.get("model", self.model),
                backend=self.name,
                finish_reason=hit.get("finish_reason"),
                reasoning=hit.get("reasoning"),
            )
            attach_parsed(req, resp)
            self.accounting.record_cache_hit(req.stage, parse_failed=resp.parse_error is not None)
            return resp
        resp = await self.inner.chat(req)
        if resp.parse_error is None:
            await self.cache.aput(key, self.name, req.stage, resp)
        return resp

    def _backend(self) -> object:
        inner: object = self.inner
        while isinstance(inner, _Wrapper):
            inner = inner.inner
        return inner


class RetryMiddleware(_Wrapper):
    """Retries :class:`RetryableLLMError` with exponential backoff and jitter.

    The wait before retry ``n`` (0-based) is the server's ``Retry-After`` when given (capped at
    ``max_delay``), else ``base_delay * 2**n`` times a random factor in [0.5, 1], capped at
    ``max_delay``. After ``max_retries`` retries an :class:`LLMError` names what failed and
    how many tries were made.
    """

    def __init__(
        self,
        inner: LLMBackend,
        max_retries: int,
        base_delay: float = 0.5,
        max_delay: float = 60.0,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        super().__init__(inner)
        self.max_retries = max_retries
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.sleep = sleep

    def delay(self, attempt: int, error: RetryableLLMError) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based)."""
        if error.retry_after is not None:
            return max(0.0, min(error.retry_after, self.max_delay))
        return min(self.base_delay * (2**attempt), self.max_delay) * random.uniform(0.5, 1.0)

    async def chat(self, req: ChatRequest) -> ChatResponse:
        from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type

        timeouts = 0

        def give_up(state: RetryCallState) -> bool:
            nonlocal timeouts
            error = _retryable(state)
            timeouts += int(error.timeout)
            # two read timeouts in a row: the server is too slow for this request
            return state.attempt_number > self.max_retries or timeouts > 1

        def wait(state: RetryCallState) -> float:
            return self.delay(state.attempt_number - 1, _retryable(state))

        def announce(state: RetryCallState) -> None:
            log.warning(
                "LLM %s stage %s: %s; retry %d/%d in %.2fs",
                self.name,
                req.stage,
                _retryable(state),
                state.attempt_number,
                self.max_retries,
                state.upcoming_sleep,
            )

        def fail(state: RetryCallState) -> ChatResponse:
            e, tries = _retryable(state), state.attempt_number
            error = LLMUnavailableError if e.unavailable else LLMError
            raise error(
                f"{self.name} model {self.model!r} (stage {req.stage!r}) failed after "
                f"{tries} {'try' if tries == 1 else 'tries'}: {e}"
            ) from e

        retrying = AsyncRetrying(
            retry=retry_if_exception_type(RetryableLLMError),
            stop=give_up,
            wait=wait,
            before_sleep=announce,
            retry_error_callback=fail,
            sleep=self.sleep,
        )
        result: ChatResponse = await retrying(self.inner.chat, req)
        return result


def _retryable(state: Any) -> RetryableLLMError:
    """The :class:`RetryableLLMError` of a failed attempt."""
    error = state.outcome.exception() if state.outcome is not None else None
    assert isinstance(error, RetryableLLMError)
    return error


class LoopSemaphore:
    """A semaphore of ``limit`` per event loop (an asyncio semaphore belongs to one loop, and a
    client may be used from several: the CLI's private loop, a test's loop)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._sems: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore] = (
            weakref.WeakKeyDictionary()
        )

    def get(self) -> asyncio.Semaphore:
        """The running loop's semaphore."""
        loop = asyncio.get_running_loop()
        sem = self._sems.get(loop)
        if sem is None:
            sem = self._sems[loop] = asyncio.Semaphore(self.limit)
        return sem


class ConcurrencyLimit(_Wrapper):
    """At most ``limit`` requests in flight at once (one semaphore per event loop)."""

    def __init__(self, inner: LLMBackend, limit: int) -> None:
        super().__init__(inner)
        self.limit = limit
        self._sems = LoopSemaphore(limit)

    def _semaphore(self) -> asyncio.Semaphore:
        return self._sems.get()

    async def chat(self, req: ChatRequest) -> ChatResponse:
        async with self._semaphore():
            return await self.inner.chat(req)


class AccountingMiddleware(_Wrapper):
    """Records every backend attempt (answer or error) into an :class:`Accounting`."""

    def __init__(self, inner: LLMBackend, accounting: Accounting) -> None:
        super().__init__(inner)
        self.accounting = accounting

    async def chat(self, req: ChatRequest) -> ChatResponse:
        try:
            resp = await self.inner.chat(req)
        except Exception:
            self.accounting.record_attempt_error(req.stage)
            raise
        self.accounting.record_call(
            req.stage,
            resp.prompt_tokens,
            resp.completion_tokens,
            resp.latency_s,
            parse_failed=resp.parse_error is not None,
            repetition_cut=resp.repetition_cut is not None,
            loop_stopped=resp.finish_reason == "loop",
        )
        return resp
