"""Any OpenAI-compatible chat-completions server (OpenAI, vLLM, llama.cpp, Ollama, ...).

The API key is read from the environment variable *named* ``api_key_env`` at call time; it is
never stored on the object, logged, cached or shown in ``repr``. Without that variable no
``Authorization`` header is sent (fine for a local server).

On first use the backend asks the server what it is (:mod:`biorag.llm.openai.server_info`): its
kind, its context window and whether it can count tokens. JSON requests then go out in the
strongest structured-output form the server takes (:mod:`biorag.llm.openai.structured`), falling
back form by form on a refusal and remembering what worked.

Errors say which setting to change: an unreachable server (``llm.base_url``), an unknown model
(``llm.model``), a web page instead of an API, a prompt over the context window. Timeouts: a
connect timeout of seconds; a read timeout of ``timeout_s`` plus ``timeout_per_token_s`` per
requested token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
import weakref
from collections.abc import Callable
from typing import Any

import httpx

from biorag.errors import LLMError, LLMUnavailableError
from biorag.llm.base import RetryableLLMError, attach_parsed
from biorag.llm.middleware import LoopSemaphore
from biorag.llm.openai.errors import (
    ContextOverflowError,
    error_body,
    is_context_overflow,
    looks_like_html,
    window_in,
)
from biorag.llm.openai.errors import FormatRejected as _FormatRejected
from biorag.llm.openai.errors import retry_after as _retry_after
from biorag.llm.openai.server_info import (
    LLAMA_CPP_PYTHON_COUNT,
    ServerInfo,
    ServerRegistry,
    api_root,
    probe,
)
from biorag.llm.openai.structured import (
    SETTINGS,
    apply_form,
    first_form,
    is_format_rejection,
    next_form,
)
from biorag.llm.repetition import WATCH_MIN_TOKENS
from biorag.llm.types import ChatRequest, ChatResponse, TokenLogprob
from biorag.util.secrets import mask_url, redact_request_secrets

log = logging.getLogger("biorag.llm")

#: Tokens a chat template adds around each message (a safe upper bound for common templates).
MESSAGE_OVERHEAD_TOKENS = 8

#: What ``llm.stop_loops`` may say (see :meth:`OpenAIBackend.watches_loops`).
STOP_LOOPS = ("auto", "on", "off")
#: Server kinds whose streams are watched under ``auto``: they stop generating when the stream
#: closes and report exact token counts as they go (llama.cpp's per-token ``timings``, vLLM's
#: continuous usage). llama-cpp-python and Ollama stop too but count only at the end, so a
#: stream closed early would leave estimated counts: they are watched with ``on`` only.
_WATCHED_KINDS = ("llama.cpp", "vllm")


class OpenAIBackend:
    """Chat completions over HTTP with ``httpx.AsyncClient`` (one client per event loop)."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 60.0,
        structured_output: str = "auto",
        *,
        connect_timeout_s: float = 5.0,
        timeout_per_token_s: float = 0.25,
        context_window: int | None = None,
        registry: ServerRegistry | None = None,
        stop_loops: str = "auto",
    ) -> None:
        if structured_output not in SETTINGS:
            raise ValueError(f"structured_output must be one of {SETTINGS}")
        if stop_loops not in STOP_LOOPS:
            raise ValueError(f"stop_loops must be one of {STOP_LOOPS}")
        self.stop_loops = stop_loops
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.timeout_per_token_s = timeout_per_token_s
        self.structured_output = structured_output
        self.configured_window = context_window
        self._warned_window = False  # the assumed Ollama window is warned about once
        #: a window the server stated only by refusing a prompt (llama-cpp-python reports none)
        self.learned_window: int | None = None
        self.registry = registry or ServerRegistry(None)
        self.server: ServerInfo | None = None
        #: The structured-output form that works with this server (set on first use).
        self.format_mode: str | None = None
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )
        self._slots: LoopSemaphore | None = None

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(base_url={mask_url(self.base_url)!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r})"
        )

    def where(self) -> str:
        return f"llm.base_url {mask_url(self.base_url)}"

    # -- plumbing ---------------------------------------------------------------------------

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s),
                headers=self._headers(),
            )
            self._clients[loop] = client
        return client

    def slot(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """A hold on one of the server's slots (llama.cpp reports how many it has): requests
        beyond them would only queue inside the server, where their read timeout runs while
        they wait. No limit when the server does not say."""
        slots = self.server.slots if self.server is not None else None
        if not slots:
            return contextlib.nullcontext()
        if self._slots is None or self._slots.limit != slots:
            self._slots = LoopSemaphore(slots)
        return self._slots.get()

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop."""
        loop = asyncio.get_running_loop()
        client = self._clients.pop(loop, None)
        if client is not None:
            await client.aclose()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env) if self.api_key_env else None
        if key:
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def read_timeout(self, max_tokens: int | None) -> float:
        """Seconds to wait for an answer of up to ``max_tokens`` tokens."""
        return self.timeout_s + self.timeout_per_token_s * (max_tokens or 0)

    # -- what the server is ------------------------------------------------------------------

    async def server_info(self) -> ServerInfo:
        """The server's kind and limits, asked once per backend."""
        if self.server is None:
            info = await probe(self._client(), self.base_url, self.model)
            remembered = self.registry.get(self.base_url, self.model)
            if info.kind == "unknown" and remembered.get("kind"):
                info.kind = str(remembered["kind"])
            # llama.cpp's servers answer with their one model whatever the request names
            one_model = info.kind in ("llama.cpp", "llama-cpp-python")
            if info.models and self.model not in info.models and not one_model:
                log.warning(
                    "%s does not list model %r (it lists %s): check llm.model",
                    self.where(),
                    self.model,
                    ", ".join(info.models[:5]),
                )
            if info.has_chat_template is False:
                raise LLMError(
                    f"{self.where()} serves a model without a chat template: start the server "
                    "with --chat-template (or --jinja with a template file)"
                )
            if not info.reached:
                return info  # the server is down: ask again next time
            self.server = info
            if self.format_mode is None:
                start = first_form(self.structured_output, info.kind)
                form = remembered.get("form") if self.structured_output == "auto" else None
                self.format_mode = str(form) if form else start
        return self.server

    async def context_window(self) -> int | None:
        """Tokens one request may use: ``llm.context_window`` when set, else the server's (as
        reported, or as stated in a refusal)."""
        if self.configured_window:
            return self.configured_window
        info = await self.server_info()
        if not info.n_ctx and self.learned_window:
            return self.learned_window
        if info.n_ctx_assumed and not self._warned_window:
            self._warned_window = True
            log.warning(
                "%s is Ollama, which cuts an over-long prompt without a word and does not report "
                "the window it cuts to: prompts are fitted to %d tokens, its smallest default; "
                "set llm.context_window to the server's (OLLAMA_CONTEXT_LENGTH, or the model's "
                "num_ctx) to use more",
                self.where(),
                info.n_ctx,
            )
        return info.n_ctx

    async def count_tokens(self, messages: list[dict[str, str]]) -> int | None:
        """Exact prompt tokens by the server's counter (llama.cpp's ``/tokenize``,
        llama-cpp-python's ``/extras/tokenize/count``), plus a template allowance per message;
        None when the server cannot count."""
        info = await self.server_info()
        if not info.has_tokenize:
            return None
        text = "\n".join(m["content"] for m in messages)
        lcp = info.kind == "llama-cpp-python"
        path, body = (
            (LLAMA_CPP_PYTHON_COUNT, {"input": text}) if lcp else ("/tokenize", {"content": text})
        )
        try:
            r = await self._client().post(api_root(self.base_url) + path, json=body)
            data = r.json() if r.status_code == 200 else {}
            n = data.get("count") if lcp else len(data.get("tokens") or []) or None
        except (httpx.HTTPError, ValueError, AttributeError):
            n = None
        if not isinstance(n, int):
            info.has_tokenize = False
            return None
        return n + MESSAGE_OVERHEAD_TOKENS * len(messages)

    # -- chat ----------------------------------------------------------------------------------

    async def chat(self, req: ChatRequest) -> ChatResponse:
        """Send the request in the current structured-output form, stepping down on refusal and
        (once) on a constrained answer that does not parse."""
        from biorag.llm.stream_sink import active_sink

        sink = active_sink(req)
        if sink is not None:
            return await self.stream(req, sink)
        info = await self.server_info()
        form = self.format_mode or first_form(self.structured_output, info.kind)
        tried_after_parse_failure = False
        while True:
            try:
                resp = await self._send(req, form, info.kind)
            except _FormatRejected as e:
                nxt = next_form(form, info.kind)
                if self.structured_output != "auto" or nxt is None:
                    raise LLMError(
                        f"{self.where()} refused structured output {form!r}: {e}. "
                        "Set llm.structured_output to 'auto' or 'none'."
                    ) from None
                log.warning("%s refused structured output %s; using %s", self.where(), form, nxt)
                if self.format_mode == form:
                    self.format_mode = nxt
                    self.registry.update(self.base_url, self.model, kind=info.kind, form=nxt)
                form = nxt
                continue
            if req.json_schema is None or resp.parse_error is None:
                if req.json_schema is not None:
                    self.registry.update(self.base_url, self.model, kind=info.kind, form=form)
                return resp
            nxt = next_form(form, info.kind)
            if (
                tried_after_parse_failure
                or self.structured_output != "auto"
                or nxt is None
                or form in ("json_object", "none")
                or resp.finish_reason in ("length", "loop")
            ):
                return resp
            tried_after_parse_failure = True
            log.info(
                "%s: answer under %s did not parse; asking once under %s", self.where(), form, nxt
            )
            first = resp
            try:
                resp = await self._send(req, nxt, info.kind)
            except (_FormatRejected, LLMError):
                return first
            resp.prompt_tokens += first.prompt_tokens
            resp.completion_tokens += first.completion_tokens
            resp.latency_s += first.latency_s
            return resp

    def _body(self, req: ChatRequest, form: str, kind: str) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model}
        if req.max_tokens is not None:
            body["max_tokens"] = req.max_tokens
        if req.temperature is not None:
            body["temperature"] = req.temperature
        if req.stop:
            body["stop"] = req.stop
        if req.logprobs:
            body["logprobs"] = True
            if req.top_logprobs:
                body["top_logprobs"] = req.top_logprobs
        body["messages"] = apply_form(body, req, form, kind)
        return body

    async def _post(self, body: dict[str, Any], max_tokens: int | None) -> httpx.Response:
        url = self.base_url + "/chat/completions"
        timeout = httpx.Timeout(self.read_timeout(max_tokens), connect=self.connect_timeout_s)
        try:
            async with self.slot():
                return await self._client().post(url, json=body, timeout=timeout)
        except httpx.TransportError as e:
            raise self.transport_error(e, max_tokens) from None

    def transport_error(self, e: httpx.TransportError, max_tokens: int | None) -> LLMError:
        """The retryable error for a request (whole or streamed) that never got its answer."""
        if isinstance(e, httpx.ConnectError):
            return RetryableLLMError(
                f"cannot connect to {self.where()} ({e}): start the server or fix llm.base_url",
                unavailable=True,
            )
        if isinstance(e, httpx.TimeoutException):
            return RetryableLLMError(
                f"{self.where()} gave no answer within {self.read_timeout(max_tokens):.0f}s "
                f"({type(e).__name__}; raise llm.timeout_s for a slow server)",
                timeout=True,
            )
        return RetryableLLMError(f"{self.where()} connection failed: {type(e).__name__}: {e}")

    def _check_status(self, r: httpx.Response, form: str) -> None:
        if r.status_code < 400:
            return
        message, err = error_body(r)
        if is_context_overflow(message, err):
            n_ctx = window_in(message, err)
            if n_ctx and not self.configured_window:
                self.learned_window = n_ctx  # every client of this backend fits to it now
            raise ContextOverflowError(
                f"{self.where()}: the prompt exceeds the model's context window ({message}); "
                "start the server with a larger context (-c) or set llm.context_window",
                n_ctx=n_ctx,
            )
        if is_format_rejection(r.status_code, message, form):
            raise _FormatRejected(message)
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
                retry_after=_retry_after(r.headers.get("Retry-After")),
            )
        raise LLMError(f"{self.where()} answered HTTP {r.status_code}: {message}")

    def _unreadable(self, r: httpx.Response) -> RetryableLLMError:
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

    def watches_loops(self, req: ChatRequest, kind: str) -> bool:
        """Whether ``req`` is streamed so a loop can be stopped at its onset
        (:mod:`biorag.llm.openai.streaming`): ``llm.stop_loops`` ``on``, or ``auto`` on a server
        that stops generating when the stream is closed and counts tokens as it goes (llama.cpp,
        vLLM); never for logprobs or short answers."""
        if self.stop_loops == "off" or req.logprobs:
            return False
        if req.max_tokens is not None and req.max_tokens < WATCH_MIN_TOKENS:
            return False
        return self.stop_loops == "on" or kind in _WATCHED_KINDS

    async def _send(self, req: ChatRequest, form: str, kind: str) -> ChatResponse:
        body = self._body(req, form, kind)
        if self.watches_loops(req, kind):
            from biorag.llm.openai.streaming import read_stream

            return await read_stream(self, req, body, form, kind)
        start = time.perf_counter()
        r = await self._post(body, req.max_tokens)
        latency = time.perf_counter() - start
        self._check_status(r, form)
        return self._completion(req, r, latency)

    def _completion(self, req: ChatRequest, r: httpx.Response, latency: float) -> ChatResponse:
        """The response of a whole (not streamed) chat completion ``r``."""
        try:
            data = r.json()
            choice = data["choices"][0]
            message = choice.get("message") or {}
            text = message.get("content") or ""
            if not isinstance(text, str):
                raise TypeError("content is not text")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise self._unreadable(r) from None
        return self._response(req, data, choice, text, message, latency)

    def _response(
        self,
        req: ChatRequest,
        data: dict[str, Any],
        choice: dict[str, Any],
        text: str,
        message: dict[str, Any],
        latency: float,
    ) -> ChatResponse:
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
            backend=self.name,
            finish_reason=choice.get("finish_reason"),
        )
        return attach_parsed(req, resp)

    async def stream(self, req: ChatRequest, on_text: Callable[[str], None]) -> ChatResponse:
        """Like :meth:`chat` for a plain-text request, handing each piece of text to
        ``on_text`` as the server sends it (:func:`biorag.llm.openai.streaming.stream_chat`)."""
        from biorag.llm.openai.streaming import stream_chat

        return await stream_chat(self, req, on_text)


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
