"""Context fitting: no request ever exceeds the model's context window.

:class:`ContextFitMiddleware` asks the backend for its window (``context_window()``: configured,
or reported by the server; else the one a server states when it refuses a prompt, learned then
and used from there on) and counts a prompt's tokens (``count_tokens()``: the server's
``/tokenize`` or llama-cpp-python's counter, or the model's tokenizer; else
:func:`estimate_tokens`, a deliberate over-estimate). A prompt that does not leave room for the
answer loses its lowest-ranked passages, the last ``<passage>`` blocks
(:mod:`biorag.llm.evidence`), until it does; then ``max_tokens`` is clipped to what remains.
What was dropped is logged and collected per question (:func:`collect_fits`), so a method's
answer can show it in its trace. When one passage is left and the prompt still does not fit (a
method's fixed prompt, few-shot examples and all, around one long passage), that passage loses
whole sentences from its end, never the first, and is named in the record's ``trimmed``. A
prompt that cannot fit even so, or without passages at all, is a :class:`ContextTooSmallError`
naming the window and the setting to change.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from biorag.corpus.sentences import split_sentences
from biorag.errors import LLMError
from biorag.llm.evidence import PASSAGE_BLOCK
from biorag.llm.middleware import _Wrapper
from biorag.llm.openai.errors import ContextOverflowError
from biorag.llm.types import ChatRequest, ChatResponse

log = logging.getLogger("biorag.llm")

#: Characters per token assumed when nothing can count: lower than any real tokenizer gives on
#: English or biomedical text (~3.5-4.5), so the estimate errs on the long side.
CHARS_PER_TOKEN_ESTIMATE = 2.5
#: The answer must have at least this many tokens of room (or ``max_tokens`` if smaller).
MIN_ANSWER_TOKENS = 64
#: Tokens kept free for the template's generation prompt and counting slack.
SAFETY_TOKENS = 16

_fits: ContextVar[list[dict[str, Any]] | None] = ContextVar("biorag_context_fits", default=None)


class ContextTooSmallError(LLMError):
    """Even the smallest prompt of a request does not fit the context window."""


@contextmanager
def collect_fits() -> Iterator[list[dict[str, Any]]]:
    """Collect, for the code inside (and tasks it starts), a record of every fitted request:
    ``{"stage", "window", "prompt_tokens", "max_tokens", "dropped": [passage ids]}``."""
    records: list[dict[str, Any]] = []
    token = _fits.set(records)
    try:
        yield records
    finally:
        _fits.reset(token)


def estimate_tokens(messages: list[dict[str, str]]) -> int:
    """An over-estimate of the prompt's tokens (see :data:`CHARS_PER_TOKEN_ESTIMATE`)."""
    chars = sum(len(m["content"]) for m in messages)
    return math.ceil(chars / CHARS_PER_TOKEN_ESTIMATE) + 8 * len(messages)


def _last_with_passages(messages: list[dict[str, str]]) -> int | None:
    for i in range(len(messages) - 1, -1, -1):
        if PASSAGE_BLOCK.search(messages[i]["content"]):
            return i
    return None


def drop_last_passage(
    messages: list[dict[str, str]],
) -> tuple[list[dict[str, str]], str | None, int]:
    """``(messages without the last passage block, its id, characters removed)``; the id is
    None when no message has a block."""
    i = _last_with_passages(messages)
    if i is None:
        return messages, None, 0
    content = messages[i]["content"]
    last = list(PASSAGE_BLOCK.finditer(content))[-1]
    start, end = last.span()
    while start > 0 and content[start - 1] in "\n ":
        start -= 1
    new = content[:start] + content[end:]
    out = [dict(m) for m in messages]
    out[i]["content"] = new
    return out, last.group(1), len(content) - len(new)


def trim_last_passage(
    messages: list[dict[str, str]], cut_chars: int
) -> tuple[list[dict[str, str]], str | None, int]:
    """``(messages whose last passage lost whole sentences from its end, at least cut_chars of
    them where it has them, its id, characters removed)``; the first sentence is always kept
    (the id is None when nothing could be cut)."""
    i = _last_with_passages(messages)
    if i is None:
        return messages, None, 0
    content = messages[i]["content"]
    last = list(PASSAGE_BLOCK.finditer(content))[-1]
    head = f'<passage id="{last.group(1)}">\n'
    body = last.group(0)[len(head) : -len("\n</passage>")]
    spans = split_sentences(body)
    keep = len(spans)
    while keep > 1 and len(body) - spans[keep - 1][1] < cut_chars:
        keep -= 1
    if keep == len(spans) and spans:
        keep -= 1 if keep > 1 else 0
    text = body[: spans[keep - 1][1]] if spans else body
    if len(text) >= len(body):
        return messages, None, 0
    new = content[: last.start()] + head + text + "\n</passage>" + content[last.end() :]
    out = [dict(m) for m in messages]
    out[i]["content"] = new
    return out, last.group(1), len(content) - len(new)


def count_passages(messages: list[dict[str, str]]) -> int:
    return sum(len(PASSAGE_BLOCK.findall(m["content"])) for m in messages)


class ContextFitMiddleware(_Wrapper):
    """Fits each request to ``backend.context_window()`` before passing it on (see module).

    ``backend`` is the backend whose window and token counter are used (wrappers pass them
    through). A window a server states only by refusing a prompt is remembered by the backend
    that met the refusal (:class:`~biorag.llm.openai.backend.OpenAIBackend`), so every client
    of that backend fits to it from then on.
    """

    def __init__(self, inner: Any, backend: Any) -> None:
        super().__init__(inner)
        self.backend = backend

    async def _window(self) -> int | None:
        get = getattr(self.backend, "context_window", None)
        return await get() if get is not None else None

    async def _count(self, messages: list[dict[str, str]]) -> tuple[int, bool]:
        """(tokens, exact?)"""
        count = getattr(self.backend, "count_tokens", None)
        if count is not None:
            n = await count(messages)
            if n is not None:
                return int(n), True
        return estimate_tokens(messages), False

    async def fit(self, req: ChatRequest, window: int) -> ChatRequest:
        """``req`` fitted to ``window`` tokens (unchanged when it fits as is)."""
        max_out = req.max_tokens or MIN_ANSWER_TOKENS
        if estimate_tokens(req.messages) + max_out + SAFETY_TOKENS <= window:
            return req
        need = min(max_out, MIN_ANSWER_TOKENS)
        messages = req.messages
        had = count_passages(messages)
        n, exact = await self._count(messages)
        dropped: list[str] = []
        trimmed: list[str] = []
        while n + need + SAFETY_TOKENS > window:
            excess = n + need + SAFETY_TOKENS - window
            chars = sum(len(m["content"]) for m in messages) or 1
            per_char = n / chars
            removed_tokens = 0.0
            while removed_tokens < excess and count_passages(messages) > 1:
                messages, pid, removed = drop_last_passage(messages)
                if pid is None:
                    break
                dropped.append(pid)
                removed_tokens += removed * per_char
            if not removed_tokens and count_passages(messages) == 1:
                # one passage left: its last sentences go, never the whole of it
                messages, pid, removed = trim_last_passage(messages, math.ceil(excess / per_char))
                if pid is not None and pid not in trimmed:
                    trimmed.append(pid)
                removed_tokens = removed * per_char
            if not removed_tokens:
                break
            n, exact = await self._count(messages)
        if n + need + SAFETY_TOKENS > window:
            what = "even one passage" if had else "the prompt"
            one = (", cut to its first sentence" if trimmed else "") if had else ""
            raise ContextTooSmallError(
                f"the context window of {window} tokens is too small for {what} of stage "
                f"{req.stage!r} (the prompt needs {n}{'' if exact else ' (estimated)'} tokens"
                f"{' with one passage' if had else ''}{one} plus {need} for the answer): start "
                "the server with a larger context (-c) or raise llm.context_window"
            )
        new_max = min(max_out, window - n - SAFETY_TOKENS)
        record = {
            "stage": req.stage,
            "window": window,
            "prompt_tokens": n,
            "max_tokens": new_max,
            "dropped": dropped,
            "trimmed": trimmed,
        }
        sink = _fits.get()
        if sink is not None:
            sink.append(record)
        if dropped:
            log.info(
                "stage %s: dropped %d lowest-ranked passage(s) to fit the %d-token window",
                req.stage,
                len(dropped),
                window,
            )
        return req.model_copy(update={"messages": messages, "max_tokens": new_max})

    async def chat(self, req: ChatRequest) -> ChatResponse:
        window = await self._window()
        if not window:
            try:
                return await self.inner.chat(req)
            except ContextOverflowError as e:
                if not e.n_ctx:
                    raise  # the refusal names no window: one line naming llm.context_window
                log.warning(
                    "the server refused a prompt over its %d-token context window, which it "
                    "does not report: prompts are fitted to it from now on (set "
                    "llm.context_window to say so up front)",
                    e.n_ctx,
                )
                return await self.inner.chat(await self.fit(req, e.n_ctx))

        try:
            return await self.inner.chat(await self.fit(req, window))
        except ContextOverflowError as e:
            # The count was off (a template longer than allowed for): refit once, tighter.
            tighter = int((e.n_ctx or window) * 0.8)
            log.warning(
                "stage %s: server still found the prompt too long; refitting to %d tokens",
                req.stage,
                tighter,
            )
            return await self.inner.chat(await self.fit(req, tighter))
