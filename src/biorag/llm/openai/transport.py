"""The HTTP side of one OpenAI-compatible chat server, shared by the backend and its streams.

:class:`ChatTransport` holds what reaching the server takes (its URL, the model, the name of the
key's environment variable, the timeouts), one ``httpx.AsyncClient`` per event loop and a hold
on the server's slots. It sends a chat completion whole (:meth:`~ChatTransport.post`) or
streamed (:meth:`~ChatTransport.open_stream`), and turns what comes back into a
:class:`~biorag.llm.types.ChatResponse` or into an error that says which setting to change.
:mod:`biorag.llm.openai.backend` decides what to send; :mod:`biorag.llm.openai.streaming`
reads a streamed answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator
from typing import Any

import httpx

from biorag.errors import LLMError, LLMUnavailableError
from biorag.llm.base import RetryableLLMError, attach_parsed
from biorag.llm.middleware import LoopSemaphore
from biorag.llm.openai.errors import (
    ContextOverflowError,
    FormatRejected,
    is_context_overflow,
    retry_after,
    window_in,
)
from biorag.llm.openai.structured import is_format_rejection
from biorag.llm.types import ChatRequest, ChatResponse, TokenLogprob
from biorag.util.openai_http import Timeouts, bearer_headers, error_body, looks_like_html
from biorag.util.secrets import mask_url, redact_request_secrets

#: ``ChatResponse.backend`` of every answer that came this way
BACKEND_NAME = "openai"


class ChatTransport:
    """Chat completions of ``model`` at ``base_url`` over ``httpx.AsyncClient``.

    The API key is read from the environment variable *named* ``api_key_env`` when a client is
    made; it is never stored here. ``timeouts``: connecting, and reading an answer per requested
    token. The HTTP shared with the embedder (key header, timeouts, error bodies) is
    :mod:`biorag.util.openai_http`'s. ``slots``: how many requests the server runs at once
    (None: it does not say, no limit here).
    """

    def __init__(self, base_url: str, model: str, api_key_env: str, timeouts: Timeouts) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeouts = timeouts
        self.slots: int | None = None
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )
        self._slots: LoopSemaphore | None = None

    def where(self) -> str:
        return f"llm.base_url {mask_url(self.base_url)}"

    # -- connections ---------------------------------------------------------------------------

    def client(self) -> httpx.AsyncClient:
        """The running event loop's client (made on first use)."""
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = httpx.AsyncClient(
                timeout=self.timeouts.for_request(0),
                headers={"Content-Type": "application/json", **bearer_headers(self.api_key_env)},
            )
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop."""
        loop = asyncio.get_running_loop()
        client = self._clients.pop(loop, None)
        if client is not None:
            await client.aclose()

    def slot(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """A hold on one of the server's slots (llama.cpp reports how many it has): requests
        beyond them would only queue inside the server, where their read timeout runs while
        they wait. No limit when the server does not say."""
        if not self.slots:
            return contextlib.nullcontext()
        if self._slots is None or self._slots.limit != self.slots:
            self._slots = LoopSemaphore(self.slots)
        return self._slots.get()

    # -- sending -------------------------------------------------------------------------------

    async def post(self, body: dict[str, Any], max_tokens: int | None) -> httpx.Response:
        """POST a chat completion ``body`` (asking up to ``max_tokens``) and read it whole."""
        url = self.base_url + "/chat/completions"
        try:
            async with self.slot():
                return await self.client().post(
                    url, json=body, timeout=self.timeouts.for_request(max_tokens)
                )
        except httpx.TransportError as e:
            raise self.transport_error(e, max_tokens) from None

    @contextlib.asynccontextmanager
    async def open_stream(
        self, body: dict[str, Any], max_tokens: int | None
    ) -> AsyncIterator[httpx.Response]:
        """POST a chat completion ``body`` and hold its response open to be read as it comes;
        leaving the block closes the connection. Transport errors are the caller's to map
        (:meth:`transport_error`): they may come while it reads."""
        url = self.base_url + "/chat/completions"
        timeout = self.timeouts.for_request(max_tokens)
        async with self.slot(), self.client().stream("POST", url, json=body, timeout=timeout) as r:
            yield r

    def transport_error(self, e: httpx.TransportError, max_tokens: int | None) -> LLMError:
        """The retryable error for a request (whole or streamed) that never got its answer."""
        if isinstance(e, httpx.ConnectError):
            return RetryableLLMError(
                f"cannot connect to {self.where()} ({e}): start the server or fix llm.base_url",
                unavailable=True,
            )
        if isinstance(e, httpx.TimeoutException):
            return RetryableLLMError(
                f"{self.where()} gave no answer within {self.timeouts.read_s(max_tokens):.0f}s "
                f"({type(e).__name__}; raise llm.timeout_s for a slow server)",
                timeout=True,
            )
        return RetryableLLMError(f"{self.where()} connection failed: {type(e).__name__}: {e}")

    # -- reading -------------------------------------------------------------------------------

    def check_status(self, r: httpx.Response, form: str) -> None:
        """Raise the error an HTTP error answer ``r`` to a request under structured-output
        ``form`` means: :class:`ContextOverflowError` (with the window the server stated),
        :class:`FormatRejected`, or an :class:`LLMError` naming the setting to change."""
        if r.status_code < 400:
            return
        message, err = error_body(r)
        if is_context_overflow(message, err):
            raise ContextOverflowError(
                f"{self.where()}: the prompt exceeds the model's context window ({message}); "
                "start the server with a larger context (-c) or set llm.context_window",
                n_ctx=window_in(message, err),
            )
        if is_format_rejection(r.status_code, message, form):
            raise FormatRejected(message)
        if r.status_code == 404:
            if "model" in message.lower():
                raise LLMUnavailableError(
                    f"{self.where()} has no model {self.model!r}: fix llm.model ({message})"
                )
            raise LLMUnavailableError(
                f"{self.where()} has no /chat/completions (HTTP 404): llm.base_url should be the "
                "API root, usually ending in /v1"
            )
        if r.status_code in (401, 403):
            raise LLMUnavailableError(
                f"{self.where()} answered HTTP {r.status_code}: {message}; set the API key in "
                f"the environment variable named by llm.api_key_env ({self.api_key_env})"
            )
        if r.status_code in (408, 429) or r.status_code >= 500:
            raise RetryableLLMError(
                f"{self.where()} answered HTTP {r.status_code}: {message}",
                retry_after=retry_after(r.headers.get("Retry-After")),
            )
        raise LLMError(f"{self.where()} answered HTTP {r.status_code}: {message}")

    def unreadable(self, r: httpx.Response) -> RetryableLLMError:
        """The error for an answer ``r`` that is no chat completion."""
        if looks_like_html(r):
            return RetryableLLMError(
                f"{self.where()} answered with a web page, not a chat completion: llm.base_url "
                "should be the API root of an OpenAI-compatible server, usually ending in /v1",
                unavailable=True,
            )
        return RetryableLLMError(
            f"{self.where()} sent an unreadable chat completion: "
            f"{redact_request_secrets(r.text[:200], r)!r}"
        )

    def completion(self, req: ChatRequest, r: httpx.Response, latency: float) -> ChatResponse:
        """The response of a whole (not streamed) chat completion ``r``."""
        try:
            data = r.json()
            choice = data["choices"][0]
            message = choice.get("message") or {}
            text = message.get("content") or ""
            if not isinstance(text, str):
                raise TypeError("content is not text")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise self.unreadable(r) from None
        return self.response(req, data, choice, text, message, latency)

    def response(
        self,
        req: ChatRequest,
        data: dict[str, Any],
        choice: dict[str, Any],
        text: str,
        message: dict[str, Any],
        latency: float,
    ) -> ChatResponse:
        """The response to ``req`` from a completion's parts: ``data`` (``usage``, ``model``),
        its ``choice`` (``finish_reason``, ``logprobs``), the answer ``text`` and the
        ``message`` (its reasoning), read whole or gathered from a stream."""
        usage = data.get("usage") or {}
        thinking = message.get("reasoning_content") or message.get("reasoning")
        resp = ChatResponse(
            text=text,
            reasoning=thinking if isinstance(thinking, str) and thinking.strip() else None,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            latency_s=latency,
            logprobs=_parse_logprobs(choice.get("logprobs")) if req.logprobs else None,
            model=str(data.get("model") or self.model),
            backend=BACKEND_NAME,
            finish_reason=choice.get("finish_reason"),
        )
        return attach_parsed(req, resp)


def _parse_logprobs(block: Any) -> list[TokenLogprob] | None:
    """OpenAI ``choices[0].logprobs.content`` into :class:`TokenLogprob` records."""
    if not isinstance(block, dict) or not isinstance(block.get("content"), list):
        return None
    out: list[TokenLogprob] = []
    for item in block["content"]:
        top: dict[str, float] = {}
        for alt in item.get("top_logprobs") or []:
            tok, lp = alt.get("token"), alt.get("logprob")
            if tok is None or lp is None:
                continue
            top[tok] = max(float(lp), top.get(tok, float("-inf")))
        token, logprob = item.get("token", ""), float(item.get("logprob", 0.0))
        out.append(TokenLogprob(token=token, logprob=logprob, top=top))
    return out
