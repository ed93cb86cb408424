"""The one interface every backend and middleware implements, and helpers they share."""

from __future__ import annotations

import json
import re
from collections.abc import Coroutine, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from biorag.errors import LLMError
from biorag.llm.accounting import Accounting
from biorag.llm.jsonparse import parse_json_lenient
from biorag.llm.repetition import cut_repetition
from biorag.llm.types import ChatRequest, ChatResponse


@runtime_checkable
class LLMBackend(Protocol):
    """Anything that answers chat requests: a backend, or a middleware wrapping one.

    ``name`` is the backend kind ("openai", "hf", "mock"); ``model`` the model identifier
    (readable: responses and accounting show it). Both enter the cache key, ``model`` replaced
    by ``cache_identity()`` when the backend has that method (the in-process backend: the
    model directory's content fingerprint and how it is loaded).
    """

    # Read-only: middlewares expose these as properties of the backend they wrap.
    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    async def chat(self, req: ChatRequest) -> ChatResponse:
        """Answer one request or raise :class:`LLMError` (:class:`RetryableLLMError` if a
        retry may help)."""
        ...


T = TypeVar("T")


@runtime_checkable
class ChatModel(Protocol):
    """The chat model the stage operators are given: what they use of the composed client
    :class:`~biorag.llm.factory.LLM` (which satisfies this structurally). ``None`` in its place
    is the no-LLM floor.

    ``model`` names the model (it enters provenance); ``accounting`` holds the per-stage counts
    (:func:`~biorag.llm.accounting.note_fallback` adds to them); ``concurrency`` is how many
    requests it keeps in flight at most. ``chat`` answers one request, ``chat_json`` re-asks
    once a JSON answer does not parse, ``chat_many`` answers several concurrently;
    ``run_sync`` runs a coroutine from synchronous code on the client's own loop, and
    ``aclose`` releases what the backend holds on the running loop.
    """

    @property
    def model(self) -> str: ...

    @property
    def accounting(self) -> Accounting: ...

    @property
    def concurrency(self) -> int: ...

    async def chat(self, req: ChatRequest) -> ChatResponse: ...

    async def chat_json(self, req: ChatRequest, retries: int = 1) -> ChatResponse: ...

    async def chat_many(self, reqs: Sequence[ChatRequest]) -> list[ChatResponse]: ...

    def run_sync(self, coro: Coroutine[Any, Any, T]) -> T: ...

    async def aclose(self) -> None: ...


class RetryableLLMError(LLMError):
    """A failure that may go away on retry: a timeout, a lost connection, 429 or 5xx.

    ``retry_after`` is the server's ``Retry-After`` in seconds, when it sent one.
    """

    def __init__(
        self,
        message: str,
        retry_after: float | None = None,
        *,
        timeout: bool = False,
        unavailable: bool = False,
    ) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        #: No server answered (connection refused, a web page): when retries do not help, the
        #: error is an :class:`~biorag.errors.LLMUnavailableError`.
        self.unavailable = unavailable
        #: The server gave no answer in time: retried once only (a silent server must not hold
        #: a run for many read timeouts).
        self.timeout = timeout


THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
_THINK = re.compile(r"\A\s*<think>(.*?)(?:</think>|\Z)", re.S)


def split_reasoning(text: str) -> tuple[str, str | None]:
    """``(answer, thinking)``: a reasoning model's thinking (DeepSeek-R1, QwQ and others served
    without a reasoning parser) taken out of ``text``.

    The thinking is a leading ``<think>...</think>`` block, or, when the chat template put
    ``<think>`` in the prompt so the output starts mid-thought, everything before a
    ``</think>`` that no ``<think>`` precedes. An unclosed leading block (the output was cut off
    while thinking) leaves no answer. Without any of these ``text`` comes back unchanged.
    ``thinking`` is None then, and also when the block is empty (its tags are still removed)."""
    m = _THINK.match(text)
    if m is not None:
        answer, thinking = text[m.end() :], m.group(1)
    else:
        end = text.find(THINK_CLOSE)
        if end < 0 or THINK_OPEN in text[:end]:
            return text, None
        answer, thinking = text[end + len(THINK_CLOSE) :], text[:end]
    return answer.lstrip(), thinking.strip() or None


def attach_parsed(req: ChatRequest, resp: ChatResponse) -> ChatResponse:
    """Finish a response: move a reasoning model's thinking to ``reasoning`` (see
    :func:`split_reasoning`; so no stage reads it as the answer), cut a degenerate loop at the
    end of the answer back to its first copy (:func:`~biorag.llm.repetition.cut_repetition`;
    ``repetition_cut`` says how many characters went), then fill ``parsed`` / ``parse_error``
    when the request asked for JSON (so a cut JSON list keeps its complete items)."""
    answer, thinking = split_reasoning(resp.text)
    answer, removed = cut_repetition(answer)
    resp.text = answer
    if removed:
        resp.repetition_cut = removed
    if thinking is not None:
        resp.reasoning = "\n\n".join(t for t in (resp.reasoning, thinking) if t)
    if req.json_schema is None:
        return resp
    value, error = parse_json_lenient(resp.text, req.json_schema)
    resp.parsed, resp.parse_error = value, error
    return resp


def word_count(text: str) -> int:
    """Deterministic token estimate: whitespace-separated words."""
    return len(text.split())


def with_schema_instruction(
    messages: list[dict[str, str]], schema: dict[str, Any]
) -> list[dict[str, str]]:
    """A copy of ``messages`` whose last user message asks for JSON matching ``schema``.

    Used where the server cannot enforce the schema (prompt-only structured output).
    """
    note = (
        "\n\nRespond with JSON only (no prose, no code fences), matching this JSON Schema:\n"
        + json.dumps(schema, ensure_ascii=False, sort_keys=True)
    )
    out = [dict(m) for m in messages]
    for m in reversed(out):
        if m["role"] == "user":
            m["content"] += note
            return out
    out.append({"role": "user", "content": note.strip()})
    return out
