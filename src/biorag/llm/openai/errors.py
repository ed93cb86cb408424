"""Reading an OpenAI-compatible server's error replies: what failed, and whether to retry.

:func:`error_body` takes the message and error object out of a reply (credentials the request
carried removed: some servers echo the key back); :func:`is_context_overflow` and
:func:`window_in` read context-window refusals of llama.cpp, llama-cpp-python, vLLM and OpenAI;
:func:`retry_after` reads ``Retry-After``.
"""

from __future__ import annotations

import email.utils
import json
import re
import time
from typing import Any

import httpx

from biorag.errors import LLMError
from biorag.util.secrets import redact_request_secrets

__all__ = [
    "ContextOverflowError",
    "FormatRejected",
    "error_body",
    "is_context_overflow",
    "looks_like_html",
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


def error_body(resp: httpx.Response) -> tuple[str, dict[str, Any]]:
    """The server's error message (without any credential the request carried: some servers
    echo the key back) and its error object (``{}`` when it sent none)."""
    message, err = _read_error_body(resp)
    return redact_request_secrets(message, resp), err


def _read_error_body(resp: httpx.Response) -> tuple[str, dict[str, Any]]:
    try:
        data = resp.json()
    except ValueError:
        return (resp.text[:300].strip() or resp.reason_phrase), {}
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or data.get("detail") or json.dumps(err)[:300]
            return str(msg)[:500], err
        if isinstance(err, str):
            return err[:500], {}
        if data.get("detail"):
            return str(data["detail"])[:500], {}
    return str(data)[:500], {}


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


def looks_like_html(resp: httpx.Response) -> bool:
    head = resp.text[:200].lstrip().lower()
    return "html" in resp.headers.get("content-type", "") or head.startswith(("<!doctype", "<html"))
