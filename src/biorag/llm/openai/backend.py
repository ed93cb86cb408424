"""Any OpenAI-compatible chat-completions server (OpenAI, vLLM, llama.cpp, Ollama, ...).

The API key is read from the environment variable *named* ``api_key_env`` when the HTTP client
is made; it is never stored on the object, logged, cached or shown in ``repr``. Without that
variable no ``Authorization`` header is sent (fine for a local server). What goes over the wire
is :mod:`biorag.llm.openai.transport`'s; streamed answers are read by
:mod:`biorag.llm.openai.streaming`.

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

import contextlib
import logging
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx

from biorag.errors import LLMError
from biorag.llm.openai.errors import ContextOverflowError
from biorag.llm.openai.errors import FormatRejected as _FormatRejected
from biorag.llm.openai.server_info import LLAMA_CPP_PYTHON_COUNT, ServerInfo, ServerRegistry, probe
from biorag.llm.openai.streaming import read_stream
from biorag.llm.openai.structured import SETTINGS, apply_form, first_form, next_form
from biorag.llm.openai.transport import BACKEND_NAME, ChatTransport
from biorag.llm.repetition import WATCH_MIN_TOKENS
from biorag.llm.stream_sink import active_sink
from biorag.llm.types import ChatRequest, ChatResponse
from biorag.util.openai_http import Timeouts, api_root
from biorag.util.secrets import mask_url

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
    """Chat completions over HTTP; what goes over the wire is its :attr:`transport`'s
    (:class:`~biorag.llm.openai.transport.ChatTransport`: one ``httpx.AsyncClient`` per event
    loop)."""

    name = BACKEND_NAME

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
        timeouts = Timeouts(timeout_s, timeout_per_token_s, connect_timeout_s)
        self.transport = ChatTransport(base_url, model, api_key_env, timeouts)
        self.base_url = self.transport.base_url
        self.model = model
        self.structured_output = structured_output
        self.configured_window = context_window
        self._warned_window = False  # the assumed Ollama window is warned about once
        #: a window the server stated only by refusing a prompt (llama-cpp-python reports none)
        self.learned_window: int | None = None
        self.registry = registry or ServerRegistry(None)
        self.server: ServerInfo | None = None
        #: The structured-output form that works with this server (set on first use).
        self.format_mode: str | None = None

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(base_url={mask_url(self.base_url)!r}, model={self.model!r}, "
            f"api_key_env={self.transport.api_key_env!r})"
        )

    def where(self) -> str:
        return self.transport.where()

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop."""
        await self.transport.aclose()

    # -- what the server is ------------------------------------------------------------------

    async def server_info(self) -> ServerInfo:
        """The server's kind and limits, asked once per backend."""
        if self.server is None:
            info = await probe(self.transport.client(), self.base_url, self.model)
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
            self.transport.slots = info.slots
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
            r = await self.transport.client().post(api_root(self.base_url) + path, json=body)
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
            return await self._read_stream(req, body, form, kind)
        start = time.perf_counter()
        r = await self.transport.post(body, req.max_tokens)
        latency = time.perf_counter() - start
        with self._learning_window():
            self.transport.check_status(r, form)
        return self.transport.completion(req, r, latency)

    async def stream(self, req: ChatRequest, on_text: Callable[[str], None]) -> ChatResponse:
        """Like :meth:`chat` for a plain-text request, handing each piece of text to
        ``on_text`` as the server sends it (``stream: true``); JSON and logprob requests are
        answered whole."""
        info = await self.server_info()
        if req.json_schema is not None or req.logprobs:
            return await self.chat(req)
        body = self._body(req, "none", info.kind)
        watch = self.watches_loops(req, info.kind)
        return await self._read_stream(req, body, "none", info.kind, on_text, watch)

    async def _read_stream(
        self,
        req: ChatRequest,
        body: dict[str, Any],
        form: str,
        kind: str,
        on_text: Callable[[str], None] | None = None,
        watch: bool = True,
    ) -> ChatResponse:
        with self._learning_window():
            return await read_stream(
                self.transport,
                req,
                body,
                form,
                kind,
                count_tokens=self.count_tokens,
                on_text=on_text,
                watch=watch,
            )

    @contextlib.contextmanager
    def _learning_window(self) -> Iterator[None]:
        """Remember the window a refusal in this block stated (llama-cpp-python reports none
        otherwise): every client of this backend fits to it from now on."""
        try:
            yield
        except ContextOverflowError as e:
            if e.n_ctx and not self.configured_window:
                self.learned_window = e.n_ctx
            raise
