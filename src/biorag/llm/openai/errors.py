"""What an OpenAI-compatible chat server's refusals mean: what failed, and whether to retry.

The message and error object of a reply are read by :func:`biorag.util.openai_http.error_body`
(shared with the embedder); :func:`is_context_overflow` and :func:`window_in` read from them the
context-window refusals of llama.cpp, llama-cpp-python, vLLM and OpenAI; :func:`retry_after`
reads ``Retry-After``.
"""

from __future__ import annotations

import email.utils
import re
import time
from typing import Any

from biorag.errors import LLMError

__all__ = [
    "ContextOverflowError",
    "FormatRejected",
    "is_context_overflow",
    "retry_after",
    "window_in",
]


class FormatRejected(Exception):
    """The server refused the structured-output form we sent."""


class ContextOverflowError(LLMError):
    """The server says the prompt does not fit its context window (not retried as is)."""

    def __init__(self, message: str, n_ctx: int | None = None) -> None:
        super().__init__(message)
        self.n_ctx = n_ctx


def retry_after(value: str | None) -> float | None:
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


def is_context_overflow(message: str, err: dict[str, Any]) -> bool:
    low = message.lower()
    return err.get("type") == "exceed_context_size_error" or (
        "context" in low and ("exceed" in low or "too long" in low or "maximum context" in low)
    )


_WINDOW_IN_MESSAGE = re.compile(
    r"(?:context window of|maximum context length is|context size of)\s+(\d+)", re.IGNORECASE
)


def window_in(message: str, err: dict[str, Any]) -> int | None:
    """The window an overflow error states: llama.cpp's ``n_ctx`` field, else the number in
    llama-cpp-python's "exceed context window of N" or vLLM's and OpenAI's "maximum context
    length is N"."""
    n_ctx = err.get("n_ctx")
    if isinstance(n_ctx, int) and n_ctx > 0:
        return n_ctx
    m = _WINDOW_IN_MESSAGE.search(message)
    return int(m.group(1)) if m else None
