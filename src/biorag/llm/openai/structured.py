"""Structured output over OpenAI-compatible servers: the forms a JSON request can take, in the
order they are tried, and how a server's refusal of a form is recognised.

Forms, strongest first (``auto`` walks down this list, starting at the server's own form):

``native``
    the server's own constrained decoding: llama.cpp's top-level ``json_schema`` field (it turns
    the schema into a grammar), Ollama's ``format`` (the schema), vLLM's
    ``structured_outputs: {"json": schema}``. Only for a server whose kind is known.
``json_schema``
    ``response_format: {"type": "json_schema", "json_schema": {"name", "schema"}}`` (OpenAI).
``json_object_schema``
    ``response_format: {"type": "json_object", "schema": ...}`` (llama.cpp and others constrain
    decoding to the schema given there) plus the schema in the prompt.
``json_object``
    ``response_format: {"type": "json_object"}`` plus the schema in the prompt.
``none``
    the schema in the prompt only; the answer is parsed leniently.

A server refuses a form with HTTP 400, 422 or 500 whose message names the format
(:func:`is_format_rejection`); the backend then moves one form down and remembers it. A reply
under a constrained form that does not parse (and was not cut by ``max_tokens``) is asked again
once under the next form.
"""

from __future__ import annotations

import re
from typing import Any

from biorag.llm.base import with_schema_instruction
from biorag.llm.types import ChatRequest

FORMS = ("native", "json_schema", "json_object_schema", "json_object", "none")
#: What ``llm.structured_output`` may say: ``auto`` or one form.
SETTINGS = ("auto", *FORMS)
#: Server kinds with a native constrained-decoding field.
NATIVE_KINDS = ("llama.cpp", "ollama", "vllm")

_FORMAT_WORDS = (
    "response_format",
    "json_schema",
    "json_object",
    "structured",
    "guided",
    "schema",
    "grammar",
    "format",
)


def schema_name(schema: dict[str, Any]) -> str:
    """A name OpenAI accepts for ``schema`` (letters, digits, ``_``/``-``, at most 64)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "_", str(schema.get("title") or "response"))
    return name[:64] or "response"


def first_form(setting: str, kind: str) -> str:
    """The form to start with for ``llm.structured_output = setting`` on a server of ``kind``."""
    if setting != "auto":
        return setting
    if kind == "llama-cpp-python":  # its response_format takes a schema only with json_object
        return "json_object_schema"
    return "native" if kind in NATIVE_KINDS else "json_schema"


def next_form(form: str, kind: str) -> str | None:
    """The form after ``form`` (None after ``none``); ``native`` is skipped for unknown kinds."""
    i = FORMS.index(form) + 1
    while i < len(FORMS):
        if FORMS[i] != "native" or kind in NATIVE_KINDS:
            return FORMS[i]
        i += 1
    return None


def apply_form(
    body: dict[str, Any], req: ChatRequest, form: str, kind: str
) -> list[dict[str, str]]:
    """Put ``req.json_schema`` into ``body`` the way ``form`` says; returns the messages to send
    (with the schema spelled out in the prompt for the weaker forms)."""
    schema = req.json_schema
    messages = req.messages
    if schema is None:
        return messages
    if form == "native":
        if kind == "llama.cpp":
            body["json_schema"] = schema
        elif kind == "ollama":
            body["format"] = schema
        elif kind == "vllm":
            body["structured_outputs"] = {"json": schema}
        else:  # pragma: no cover - next_form never yields native for other kinds
            body["response_format"] = _json_schema_format(schema)
        return messages
    if form == "json_schema":
        body["response_format"] = _json_schema_format(schema)
        return messages
    messages = with_schema_instruction(messages, schema)
    if form == "json_object_schema":
        body["response_format"] = {"type": "json_object", "schema": schema}
    elif form == "json_object":
        body["response_format"] = {"type": "json_object"}
    return messages


def _json_schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": schema_name(schema), "schema": schema}}


def is_format_rejection(status: int, message: str, form: str) -> bool:
    """Whether an HTTP error answers "this structured-output form is not supported".

    400 and 422 (validation) and 500 (llama-cpp-python, some proxies) count when the message
    names a format word; ``none`` sends no format, so nothing is a rejection of it.
    """
    if form == "none" or status not in (400, 422, 500, 501):
        return False
    low = message.lower()
    if "context" in low and ("exceed" in low or "too long" in low or "length" in low):
        return False
    return any(w in low for w in _FORMAT_WORDS)
