"""Several endpoints serving one model: requests spread across them, failover, rest.

``llm.base_url`` may list several servers. :class:`EndpointPool` sends each request to the
healthy endpoint with the fewest requests in flight (each endpoint takes at most
``per_endpoint`` at once). A connection error or 5xx marks the endpoint unhealthy for a rest
period that doubles with each consecutive failure (``rest_s`` up to ``max_rest_s``), and the
request goes straight to the next endpoint. When every endpoint has failed the request, the
last error is raised as retryable, so the retry middleware waits and tries the pool again;
rested endpoints are tried again once their rest is over. Nothing that an endpoint answered is
sent again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from biorag.llm.base import RetryableLLMError
from biorag.llm.middleware import LoopSemaphore
from biorag.llm.types import ChatRequest, ChatResponse
from biorag.util.secrets import mask_url

log = logging.getLogger("biorag.llm")


class _Endpoint:
    def __init__(self, backend: Any, limit: int) -> None:
        self.backend = backend
        self.limit = limit
        self.in_flight = 0
        self.failures = 0
        self.resting_until = 0.0
        self.answered = 0
        self._sems = LoopSemaphore(limit)

    def semaphore(self) -> asyncio.Semaphore:
        return self._sems.get()

    def healthy(self, now: float) -> bool:
        return now >= self.resting_until


class EndpointPool:
    """An :class:`~biorag.llm.base.LLMBackend` over several backends of one model."""

    def __init__(
        self,
        backends: list[Any],
        per_endpoint: int = 4,
        rest_s: float = 5.0,
        max_rest_s: float = 120.0,
    ) -> None:
        if not backends:
            raise ValueError("an endpoint pool needs at least one backend")
        self.endpoints = [_Endpoint(b, per_endpoint) for b in backends]
        self.rest_s = rest_s
        self.max_rest_s = max_rest_s
        self.failovers = 0
        self.name = backends[0].name
        self.model = backends[0].model

    def __repr__(self) -> str:
        urls = ", ".join(mask_url(getattr(e.backend, "base_url", "?")) for e in self.endpoints)
        return f"EndpointPool([{urls}], model={self.model!r})"

    def _pick(self, tried: set[int]) -> _Endpoint | None:
        now = time.monotonic()
        left = [e for e in self.endpoints if id(e) not in tried]
        if not left:
            return None
        healthy = [e for e in left if e.healthy(now)]
        pool = healthy or [min(left, key=lambda e: e.resting_until)]
        return min(pool, key=lambda e: (e.in_flight / e.limit, self.endpoints.index(e)))

    def _failed(self, ep: _Endpoint, error: Exception) -> None:
        ep.failures += 1
        rest = min(self.rest_s * 2 ** (ep.failures - 1), self.max_rest_s)
        ep.resting_until = time.monotonic() + rest
        log.warning(
            "endpoint %s failed (%s); resting it %.0fs",
            mask_url(getattr(ep.backend, "base_url", "?")),
            error,
            rest,
        )

    async def chat(self, req: ChatRequest) -> ChatResponse:
        tried: set[int] = set()
        last: RetryableLLMError | None = None
        while (ep := self._pick(tried)) is not None:
            tried.add(id(ep))
            ep.in_flight += 1
            try:
                async with ep.semaphore():
                    resp = await ep.backend.chat(req)
            except RetryableLLMError as e:
                self._failed(ep, e)
                last = e
                if len(tried) < len(self.endpoints):
                    self.failovers += 1
                continue
            finally:
                ep.in_flight -= 1
            ep.failures = 0
            ep.resting_until = 0.0
            ep.answered += 1
            return resp
        assert last is not None
        raise RetryableLLMError(
            f"all {len(self.endpoints)} endpoints failed; last: {last}",
            unavailable=last.unavailable,
        )

    async def stream(self, req: ChatRequest, on_text: Any) -> ChatResponse:
        """Streams from the first healthy endpoint (no failover once text has been shown)."""
        ep = self._pick(set()) or self.endpoints[0]
        return await ep.backend.stream(req, on_text)

    async def context_window(self) -> int | None:
        """The smallest window any endpoint reports (a request must fit wherever it goes)."""
        windows = []
        for ep in self.endpoints:
            get = getattr(ep.backend, "context_window", None)
            try:
                w = await get() if get is not None else None
            except RetryableLLMError:
                continue
            if w:
                windows.append(w)
        return min(windows) if windows else None

    async def count_tokens(self, messages: list[dict[str, str]]) -> int | None:
        now = time.monotonic()
        for ep in self.endpoints:
            count = getattr(ep.backend, "count_tokens", None)
            if count is not None and ep.healthy(now):
                try:
                    return await count(messages)
                except RetryableLLMError:
                    continue
        return None

    def stats(self) -> list[dict[str, Any]]:
        """Per endpoint: URL, answered requests, consecutive failures."""
        return [
            {
                "base_url": mask_url(getattr(e.backend, "base_url", "?")),
                "answered": e.answered,
                "failures": e.failures,
            }
            for e in self.endpoints
        ]

    async def aclose(self) -> None:
        for ep in self.endpoints:
            closer = getattr(ep.backend, "aclose", None)
            if closer is not None:
                await closer()
