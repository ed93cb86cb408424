"""Streamed completions (``stream: true``): text as the server sends it, loops stopped early.

Two uses share one reader (:func:`read_stream`), which sends through the backend's
:class:`~biorag.llm.openai.transport.ChatTransport`:

* **the final answer on a terminal** (``biorag ask``): each piece is handed to a callback as it
  comes (:func:`~biorag.llm.stream_sink.stream_answers_to`,
  :meth:`~biorag.llm.openai.backend.OpenAIBackend.stream`);
* **stopping a loop at its onset** (``llm.stop_loops``; by default on llama.cpp and vLLM, which
  stop generating when the stream closes and count tokens as they go): a small model that
  starts repeating the same claim or JSON item would otherwise run to ``max_tokens`` before
  :func:`~biorag.llm.repetition.cut_repetition` cuts the loop afterwards. Watched requests are
  streamed, the text is checked for a loop as it grows (:func:`~biorag.llm.repetition.find_loop`),
  and on the first loop the connection is closed, which makes the server stop generating. The
  response then ends ``finish_reason = "loop"``, and the usual cut keeps what came before the
  loop.

The response is the same as a whole answer's: token counts come from the server's final
``usage`` chunk, or, for a stream closed at a loop, from llama.cpp's per-token ``timings`` or
vLLM's per-chunk ``usage`` (the tokens the server had reported when the stream was closed; it
may generate one or two more before it notices). A server with neither (watched under ``on``)
gets the prompt counted by its tokenizer endpoint and one completion token per streamed piece,
and the response says the counts are estimated. A server that ignores ``stream`` and answers
whole is read as a whole answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from biorag.llm.base import RetryableLLMError
from biorag.llm.openai.transport import ChatTransport
from biorag.llm.repetition import find_loop
from biorag.llm.types import ChatRequest, ChatResponse

#: counts a prompt's tokens by the server's counter (None when it cannot)
TokenCounter = Callable[[list[dict[str, str]]], Awaitable[int | None]]

#: a watched stream is checked for a loop each time this many characters more have come
CHECK_EVERY_CHARS = 160


class _Reader:
    """What a stream has sent so far."""

    def __init__(self, on_text: Callable[[str], None] | None) -> None:
        self.on_text = on_text
        self.parts: list[str] = []
        self.reasoning: list[str] = []
        self.chars = 0
        self.pieces = 0
        self.usage: dict[str, Any] = {}
        self.timings: dict[str, Any] = {}
        self.model: str | None = None
        self.finish: str | None = None
        self.chunks = 0

    def take(self, line: str) -> bool:
        """Read one SSE line; False at the stream's end."""
        if not line.startswith("data:"):
            return True
        payload = line[5:].strip()
        if payload == "[DONE]":
            return False
        try:
            chunk = json.loads(payload)
        except ValueError:
            return True
        if not isinstance(chunk, dict):
            return True
        self.chunks += 1
        self.usage = chunk.get("usage") or self.usage
        self.timings = chunk.get("timings") or self.timings
        self.model = chunk.get("model") or self.model
        for ch in chunk.get("choices") or []:
            delta = ch.get("delta") or {}
            piece = delta.get("content")
            if isinstance(piece, str) and piece:
                self.parts.append(piece)
                self.chars += len(piece)
                self.pieces += 1
                if self.on_text is not None:
                    self.on_text(piece)
            thought = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thought, str):
                self.reasoning.append(thought)
            self.finish = ch.get("finish_reason") or self.finish
        return True

    def text(self) -> str:
        return "".join(self.parts)


async def read_stream(
    transport: ChatTransport,
    req: ChatRequest,
    body: dict[str, Any],
    form: str,
    kind: str,
    *,
    count_tokens: TokenCounter,
    on_text: Callable[[str], None] | None = None,
    watch: bool = True,
) -> ChatResponse:
    """Send ``body`` (built for ``form``, to a server of ``kind``) through ``transport`` with
    ``stream: true`` and read the answer, handing each piece to ``on_text``; with ``watch``,
    close the stream at the first loop. ``count_tokens`` counts the prompt where the server
    reported no token counts."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    if kind == "llama.cpp":
        body["timings_per_token"] = True  # exact counts even for a stream closed early
    elif kind == "vllm":
        body["stream_options"]["continuous_usage_stats"] = True  # usage in every chunk
    start = time.perf_counter()
    reader = _Reader(on_text)
    looped = False
    try:
        async with transport.open_stream(body, req.max_tokens) as r:
            if r.status_code >= 400:
                await r.aread()
                transport.check_status(r, form)
            if "text/event-stream" not in r.headers.get("content-type", ""):
                await r.aread()
                if not r.text.lstrip().startswith("data:"):  # the server answered whole
                    return transport.completion(req, r, time.perf_counter() - start)
                for line in r.text.splitlines():  # a stream sent without its content type
                    if not reader.take(line):
                        break
                latency = time.perf_counter() - start
                return await _finish(transport, req, body, reader, False, latency, count_tokens)
            checked = 0
            async for line in r.aiter_lines():
                if not reader.take(line):
                    break
                if watch and reader.chars - checked >= CHECK_EVERY_CHARS:
                    checked = reader.chars
                    if find_loop(reader.text()) is not None:
                        looped = True
                        break  # leaving the block closes the connection: the server stops
    except httpx.TransportError as e:
        raise transport.transport_error(e, req.max_tokens) from None
    if reader.chunks == 0:
        raise RetryableLLMError(f"{transport.where()} sent an empty or unreadable answer stream")
    latency = time.perf_counter() - start
    return await _finish(transport, req, body, reader, looped, latency, count_tokens)


async def _finish(
    transport: ChatTransport,
    req: ChatRequest,
    body: dict[str, Any],
    reader: _Reader,
    looped: bool,
    latency: float,
    count_tokens: TokenCounter,
) -> ChatResponse:
    usage = dict(reader.usage)
    estimated = False
    if not usage.get("completion_tokens"):
        t = reader.timings
        if t.get("predicted_n") is not None:
            usage = {
                "prompt_tokens": int(t.get("prompt_n") or 0) + int(t.get("cache_n") or 0),
                "completion_tokens": int(t["predicted_n"]),
            }
        elif reader.pieces:
            prompt = await count_tokens(body.get("messages") or [])
            usage = {"prompt_tokens": prompt or 0, "completion_tokens": reader.pieces}
            estimated = True
    data = {"usage": usage, "model": reader.model or transport.model}
    choice = {"finish_reason": "loop" if looped else reader.finish}
    message = {"reasoning_content": "".join(reader.reasoning)}
    resp = transport.response(req, data, choice, reader.text(), message, latency)
    resp.tokens_estimated = estimated
    return resp
