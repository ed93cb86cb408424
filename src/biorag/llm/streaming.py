"""Streaming the final answer (``stream: true``): text is shown as the server sends it.

Used by ``biorag ask`` on a terminal; the returned response is the same as a whole answer's
(token counts from the server's final ``usage`` chunk).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import httpx

from biorag.llm.base import RetryableLLMError
from biorag.llm.types import ChatRequest, ChatResponse

if TYPE_CHECKING:
    from biorag.llm.openai_backend import OpenAIBackend

_sink: ContextVar[tuple[Callable[[str], None], frozenset[str]] | None] = ContextVar(
    "biorag_stream_sink", default=None
)


@contextmanager
def stream_answers_to(
    on_text: Callable[[str], None], stages: tuple[str, ...] = ("answer",)
) -> Iterator[None]:
    """Inside this block (and the tasks it starts), plain-text requests of ``stages`` to a
    backend that can stream are streamed, each piece handed to ``on_text``."""
    token = _sink.set((on_text, frozenset(stages)))
    try:
        yield
    finally:
        _sink.reset(token)


def active_sink(req: ChatRequest) -> Callable[[str], None] | None:
    """The callback to stream ``req`` to, when a block of :func:`stream_answers_to` asks for
    its stage and it is plain text."""
    sink = _sink.get()
    if sink is None or req.json_schema is not None or req.logprobs:
        return None
    on_text, stages = sink
    return on_text if req.stage in stages else None


async def stream_chat(
    backend: OpenAIBackend, req: ChatRequest, on_text: Callable[[str], None]
) -> ChatResponse:
    """Answer ``req`` through ``backend`` with ``stream: true``, handing each piece of text
    to ``on_text`` as the server sends it; JSON and logprob requests are answered whole."""
    info = await backend.server_info()
    if req.json_schema is not None or req.logprobs:
        return await backend.chat(req)
    body = backend._body(req, "none", info.kind)
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    url = backend.base_url + "/chat/completions"
    timeout = httpx.Timeout(backend.read_timeout(req.max_tokens), connect=backend.connect_timeout_s)
    start = time.perf_counter()
    parts: list[str] = []
    usage: dict[str, Any] = {}
    finish: str | None = None
    model = backend.model
    try:
        async with (
            backend.slot(),
            backend._client().stream("POST", url, json=body, timeout=timeout) as r,
        ):
            if r.status_code >= 400:
                await r.aread()
                backend._check_status(r, "none")
            async for line in r.aiter_lines():
                if not line.startswith("data:"):
                    continue
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                try:
                    chunk = json.loads(payload)
                except ValueError:
                    continue
                usage = chunk.get("usage") or usage
                model = chunk.get("model") or model
                for ch in chunk.get("choices") or []:
                    piece = (ch.get("delta") or {}).get("content")
                    if piece:
                        parts.append(piece)
                        on_text(piece)
                    finish = ch.get("finish_reason") or finish
    except httpx.ConnectError as e:
        raise RetryableLLMError(
            f"cannot connect to {backend.where()} ({e}): start the server or fix llm.base_url",
            unavailable=True,
        ) from None
    except httpx.TimeoutException:
        raise RetryableLLMError(
            f"{backend.where()} stopped sending the answer", timeout=True
        ) from None
    data = {"usage": usage, "model": model}
    choice = {"finish_reason": finish}
    return backend._response(req, data, choice, "".join(parts), {}, time.perf_counter() - start)
