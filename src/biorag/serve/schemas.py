"""The request bodies of the HTTP API, with the limits a shared service needs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: The longest question accepted, in characters.
MAX_QUESTION_CHARS = 2000
#: The most answer options accepted.
MAX_OPTIONS = 10
#: The most passages a retrieve request may ask for.
MAX_K = 100
#: Method options a request may not set: they name models, servers, storage or files, which
#: only the server's own configuration chooses (a request naming a model server of its own
#: could have the server send it a key).
SERVER_ONLY_OPTIONS = frozenset(
    {"reasoning_model", "kg", "backend", "uri", "user", "database", "password_env"}
)
#: The largest number a method option may take (k, top_n, token_limit...).
MAX_OPTION_NUMBER = 10_000


class AskRequest(BaseModel):
    """``POST /v1/ask``: a question, its options if multiple-choice, the method and its options."""

    model_config = ConfigDict(extra="forbid")

    question: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    options: dict[str, str] = Field(default_factory=dict, max_length=MAX_OPTIONS)
    type: Literal["", "yesno", "factoid", "list", "summary"] = ""
    method: str | None = Field(default=None, description="default: the server's --method")
    method_options: dict[str, Any] = Field(default_factory=dict, max_length=32)
    stream: bool = Field(default=False, description="answer as Server-Sent Events")

    @field_validator("question")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("the question is only whitespace")
        return value.strip()

    @field_validator("method_options")
    @classmethod
    def _safe_method_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        for key, v in value.items():
            if key in SERVER_ONLY_OPTIONS:
                raise ValueError(f"{key} is set by the server's configuration, not by a request")
            if isinstance(v, bool) or v is None:
                continue
            if isinstance(v, int | float):
                if abs(v) > MAX_OPTION_NUMBER:
                    raise ValueError(f"{key} = {v} is over the limit of {MAX_OPTION_NUMBER}")
            elif not isinstance(v, str) or len(v) > 100:
                raise ValueError(f"{key} must be a number, a flag or a short text")
        return value

    @field_validator("options")
    @classmethod
    def _short_options(cls, value: dict[str, str]) -> dict[str, str]:
        for key, text in value.items():
            if not key.strip() or len(key) > 8 or len(text) > MAX_QUESTION_CHARS:
                raise ValueError(f"option {key[:8]!r}: a letter and a text of a sensible length")
        return value


class RetrieveRequest(BaseModel):
    """``POST /v1/retrieve``: the top ``k`` chunks (or documents) for a query."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=MAX_QUESTION_CHARS)
    k: int = Field(default=10, ge=1, le=MAX_K)
    retriever: Literal["bm25", "dense", "hybrid"] | None = None
    level: Literal["chunk", "doc"] = "chunk"


class ChatMessage(BaseModel):
    role: str
    content: str


class ChatRequest(BaseModel):
    """``POST /v1/chat/completions``, the OpenAI shape: the last user message is the question;
    ``model`` names a biorag method (any other name: the server's default method)."""

    model_config = ConfigDict(extra="allow")

    model: str = ""
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
