"""The request bodies of the HTTP API, with the limits a shared service needs."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from biorag.errors import BioragError

#: The longest question accepted, in characters.
MAX_QUESTION_CHARS = 2000
#: The most answer options accepted.
MAX_OPTIONS = 10
#: The most passages a retrieve request may ask for.
MAX_K = 100
#: method options that say how many passages or claims an ask retrieves: capped at MAX_K
DEPTH_OPTIONS = frozenset({"k", "per_corpus_k", "top_k"})
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
                if key in DEPTH_OPTIONS and v > MAX_K:
                    raise ValueError(f"{key} = {v}: at most {MAX_K} passages per ask")
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
    """One message; ``content`` is a text or, as current clients send it, a list of parts
    (``{"type": "text", "text": ...}``; other kinds are refused by :meth:`text`)."""

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self, where: str) -> str:
        """The message's text (its text parts joined); a part of another kind is a
        :class:`BioragError` naming it at ``where`` (``messages[2]``)."""
        if self.content is None or isinstance(self.content, str):
            return self.content or ""
        out = []
        for j, part in enumerate(self.content):
            kind = part.get("type")
            if kind != "text" or not isinstance(part.get("text"), str):
                raise BioragError(
                    f"{where}.content[{j}] is a {kind!r} part; biorag answers text: send the "
                    'question as a string or as {"type": "text", "text": "..."} parts'
                )
            out.append(part["text"])
        return "\n".join(out)


class ChatRequest(BaseModel):
    """``POST /v1/chat/completions``, the OpenAI shape: the last user message is the question;
    ``model`` names a biorag method (any other name: the server's default method)."""

    model_config = ConfigDict(extra="allow")

    model: str = ""
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
