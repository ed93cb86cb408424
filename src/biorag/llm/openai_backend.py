"""Any OpenAI-compatible chat-completions server (OpenAI, vLLM, llama.cpp, Ollama, ...).

The API key is read from the environment variable *named* ``api_key_env`` at call time; it is
never stored on the object, logged, cached or shown in ``repr``. Without that variable no
``Authorization`` header is sent (fine for a local vLLM).

Structured output (``structured_output="auto"``): a request with ``json_schema`` is sent with
``response_format = {"type": "json_schema", ...}``; if the server answers 400 about the response
format, the backend falls back to ``{"type": "json_object"}`` and then to prompt-only (schema in
the prompt), and remembers the working mode for later requests.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import re
import time
import weakref
from typing import Any

import httpx

from biorag.errors import LLMError
from biorag.llm.base import RetryableLLMError, attach_parsed, mask_url, with_schema_instruction
from biorag.llm.types import ChatRequest, ChatResponse, TokenLogprob

log = logging.getLogger("biorag.llm")

_MODES = ("json_schema", "json_object", "none")
_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured", "guided", "schema")


class _FormatRejected(Exception):
    """The server refused the response_format we sent (HTTP 400 mentioning it)."""


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _server_message(resp: httpx.Response) -> str:
    try:
        data = resp.json()
    except ValueError:
        return resp.text[:500].strip() or resp.reason_phrase
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])[:500]
        if isinstance(err, str):
            return err[:500]
        if data.get("detail"):
            return str(data["detail"])[:500]
    return str(data)[:500]


def _schema_name(schema: dict[str, Any]) -> str:
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "response"))
    return name[:64] or "response"


class OpenAIBackend:
    """Chat completions over HTTP with ``httpx.AsyncClient`` (one client per event loop)."""

    name = "openai"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str = "OPENAI_API_KEY",
        timeout_s: float = 120.0,
        structured_output: str = "auto",
    ) -> None:
        if structured_output not in ("auto", *_MODES):
            raise ValueError(f"structured_output must be auto or one of {_MODES}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout_s = timeout_s
        self.structured_output = structured_output
        # The mode that works with this server; auto starts with the strongest one.
        self.format_mode = "json_schema" if structured_output == "auto" else structured_output
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return (
            f"OpenAIBackend(base_url={mask_url(self.base_url)!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r})"
        )

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout_s))
            self._clients[loop] = client
        return client

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

    def _body(self, req: ChatRequest, mode: str) -> dict[str, Any]:
        messages = req.messages
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
        if req.json_schema is not None:
            if mode == "json_schema":
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": _schema_name(req.json_schema),
                        "schema": req.json_schema,
                    },
                }
            else:
                messages = with_schema_instruction(messages, req.json_schema)
                if mode == "json_object":
                    body["response_format"] = {"type": "json_object"}
        body["messages"] = messages
        return body

    async def chat(self, req: ChatRequest) -> ChatResponse:
        """Send the request, falling back through structured-output modes in auto mode."""
        while True:
            mode = self.format_mode
            try:
                return await self._send(req, mode)
            except _FormatRejected as e:
                if self.structured_output != "auto" or mode == "none":
                    raise LLMError(
                        f"{self._where()} rejected response_format {mode!r}: {e}. "
                        "Set llm.structured_output to 'auto' or 'none'."
                    ) from None
                nxt = _MODES[_MODES.index(mode) + 1]
                log.warning("%s rejected response_format %s; falling back to %s", self, mode, nxt)
                if self.format_mode == mode:
                    self.format_mode = nxt

    def _where(self) -> str:
        return f"server {mask_url(self.base_url)} (model {self.model!r})"

    async def _send(self, req: ChatRequest, mode: str) -> ChatResponse:
        body = self._body(req, mode)
        url = self.base_url + "/chat/completions"
        start = time.perf_counter()
        try:
            r = await self._client().post(url, json=body, headers=self._headers())
        except httpx.TimeoutException as e:
            raise RetryableLLMError(
                f"{self._where()} timed out after {self.timeout_s}s ({type(e).__name__})"
            ) from None
        except httpx.TransportError as e:
            raise RetryableLLMError(
                f"{self._where()} connection failed: {type(e).__name__}: {e}"
            ) from None
        latency = time.perf_counter() - start
        if r.status_code in (408, 429) or r.status_code >= 500:
            raise RetryableLLMError(
                f"{self._where()} answered HTTP {r.status_code}: {_server_message(r)}",
                retry_after=_retry_after(r.headers.get("Retry-After")),
            )
        if r.status_code >= 400:
            message = _server_message(r)
            if (
                r.status_code == 400
                and "response_format" in body
                and any(w in message.lower() for w in _FORMAT_WORDS)
            ):
                raise _FormatRejected(message)
            raise LLMError(f"{self._where()} answered HTTP {r.status_code}: {message}")
        try:
            data = r.json()
            choice = data["choices"][0]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(
                f"{self._where()} sent an unreadable chat completion: {r.text[:200]!r}"
            ) from None
        usage = data.get("usage") or {}
        message = choice.get("message") or {}
        thinking = message.get("reasoning_content") or message.get("reasoning")
        resp = ChatResponse(
            text=message.get("content") or "",
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
