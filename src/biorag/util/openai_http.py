"""The HTTP that biorag's two clients of OpenAI-compatible servers share: the chat backend
(:mod:`biorag.llm.openai`) and the embedder (:mod:`biorag.embed.openai_embedder`).

* :func:`bearer_headers`: the API key, read from the environment variable the settings *name*
  when a request or client is made, as a bearer header (none without it);
* :class:`Timeouts`: connecting may take seconds, reading an answer a base plus a share per
  unit of work (a requested token, a text of the batch);
* :func:`api_base` and :func:`api_root`: a server's API root (``.../v1``) and the server root
  under it;
* :func:`error_body` and :func:`looks_like_html`: what an error answer says, in the shapes
  OpenAI, vLLM, Ollama and llama.cpp send (any credential the request carried removed: some
  servers echo the key back), and whether an answer is a web page rather than the API.

What each client does with a failure (retry, which setting the error names) stays its own.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import httpx

from biorag.util.secrets import redact_request_secrets

__all__ = ["Timeouts", "api_base", "api_root", "bearer_headers", "error_body", "looks_like_html"]

#: the longest error message :func:`error_body` returns (300 for a body that is not JSON)
MESSAGE_CHARS = 500
_TEXT_CHARS = 300


def bearer_headers(api_key_env: str | None) -> dict[str, str]:
    """``Authorization: Bearer <key>`` with the key in the environment variable named
    ``api_key_env``; nothing when it is unset or empty (fine for a local server)."""
    key = os.environ.get(api_key_env) if api_key_env else None
    return {"Authorization": f"Bearer {key}"} if key else {}


@dataclass(frozen=True)
class Timeouts:
    """Connect within ``connect_s``; read an answer within ``base_s`` plus ``per_unit_s`` per
    unit the request asks for (a requested token, a text of the batch)."""

    base_s: float
    per_unit_s: float
    connect_s: float = 5.0

    def read_s(self, units: int | None) -> float:
        """Seconds to wait for the answer to a request of ``units`` units."""
        return self.base_s + self.per_unit_s * (units or 0)

    def for_request(self, units: int | None) -> httpx.Timeout:
        """The ``httpx`` timeout of a request of ``units`` units."""
        return httpx.Timeout(self.read_s(units), connect=self.connect_s)


def api_base(base_url: str) -> str:
    """``base_url`` without a trailing slash; a bare ``http://host:port`` gets ``/v1``."""
    base = base_url.rstrip("/")
    return base + "/v1" if urlsplit(base).path in ("", "/") else base


def api_root(base_url: str) -> str:
    """The server root of an OpenAI base URL (``http://h:8080/v1`` -> ``http://h:8080``)."""
    url = base_url.rstrip("/")
    return url[: -len("/v1")] if url.endswith("/v1") else url


def error_body(resp: httpx.Response) -> tuple[str, dict[str, Any]]:
    """The server's error message and its error object (``{}`` when it sent none).

    Read from ``{"error": {"message"}}`` (OpenAI, llama.cpp, vLLM), ``{"error": "..."}``
    (Ollama), ``{"detail": ...}`` (FastAPI servers) or a body that is not JSON; without any
    credential the request carried; at most :data:`MESSAGE_CHARS` characters."""
    try:
        data = resp.json()
    except ValueError:
        text = redact_request_secrets(resp.text, resp).strip()[:_TEXT_CHARS]
        return text or resp.reason_phrase, {}
    err: Any = data.get("error", data) if isinstance(data, dict) else None
    if not isinstance(data, dict):
        message, err = data, {}
    elif isinstance(err, dict):
        message = err.get("message") or err.get("detail") or data.get("detail") or err
    elif isinstance(err, str):
        message, err = err, {}
    else:
        message, err = data.get("detail") or data, {}
    text = message if isinstance(message, str) else json.dumps(message)
    return redact_request_secrets(text, resp)[:MESSAGE_CHARS], err


def looks_like_html(resp: httpx.Response) -> bool:
    """Whether ``resp`` is a web page (or other markup), not an API's JSON."""
    ctype = resp.headers.get("content-type", "").lower()
    head = resp.text[:200].lstrip().lower()
    return "html" in ctype or head.startswith(("<!doctype", "<html", "<?xml"))
