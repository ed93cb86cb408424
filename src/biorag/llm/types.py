"""Request and response records every backend and middleware passes around."""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

ROLES = ("system", "user", "assistant")


class ChatRequest(BaseModel):
    """One chat-completion request.

    ``max_tokens`` / ``temperature`` left ``None`` take the configured defaults (the composed
    :class:`~biorag.llm.factory.LLM` fills them in before the cache key is computed).
    ``json_schema`` asks for JSON matching the schema; the response's ``parsed`` then holds the
    value (or ``parse_error`` says why there is none). ``stage`` names the pipeline stage for
    accounting; ``template_version`` (a :class:`~biorag.llm.prompts.PromptTemplate` version)
    enters the cache key so editing a prompt invalidates its cached answers.
    """

    model_config = ConfigDict(extra="forbid")

    messages: list[dict[str, str]]
    max_tokens: int | None = Field(default=None, ge=1)
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    stop: list[str] | None = None
    json_schema: dict[str, Any] | None = None
    logprobs: bool = False
    top_logprobs: int = Field(default=0, ge=0, le=20)
    stage: str = "default"
    template_version: str = ""

    @field_validator("messages")
    @classmethod
    def _check_messages(cls, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        if not messages:
            raise ValueError("a chat request needs at least one message")
        for i, m in enumerate(messages):
            if m.get("role") not in ROLES or not isinstance(m.get("content"), str):
                raise ValueError(
                    f"message {i} must be {{'role': one of {ROLES}, 'content': str}}, got {m!r}"
                )
        return messages

    def last_user_message(self) -> str:
        """The content of the last ``user`` message ('' when there is none)."""
        for m in reversed(self.messages):
            if m["role"] == "user":
                return m["content"]
        return ""


class TokenLogprob(BaseModel):
    """One generated token, its log-probability and the most likely alternatives."""

    token: str
    logprob: float
    top: dict[str, float] = Field(default_factory=dict)


class ChatResponse(BaseModel):
    """What a backend answered, with token counts, timing and (for JSON requests) the value.

    ``cache_hit`` responses keep the token counts of the original call; accounting counts them
    as hits with no new tokens.
    """

    text: str
    parsed: Any | None = None
    parse_error: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cache_hit: bool = False
    logprobs: list[TokenLogprob] | None = None
    model: str = ""
    backend: str = ""
    finish_reason: str | None = None
    reasoning: str | None = Field(
        default=None,
        description="a reasoning model's thinking, kept apart from ``text``: the server's "
        "``reasoning_content``, or a leading <think>...</think> block taken out of the text",
    )
    repetition_cut: int | None = Field(
        default=None,
        description="characters removed from the end of ``text`` because the model looped "
        "(:func:`biorag.llm.repetition.cut_repetition`); None when nothing was cut",
    )
    tokens_estimated: bool = Field(
        default=False,
        description="the server reported no token counts (a streamed answer closed at a loop "
        "by a server without usage or timings): prompt counted by its tokenizer, one completion "
        "token per streamed piece",
    )


def _norm(token: str) -> str:
    return token.strip().lower()


def yes_no_probability(resp: ChatResponse) -> float | None:
    """P("yes") normalized over {yes, no} from the first generated token's top logprobs.

    Tokens are compared case- and space-insensitively (" Yes", "yes", "YES" all count as yes)
    and their probabilities summed. Leading whitespace-only tokens are skipped. Returns None
    when there are no logprobs or neither yes nor no is among the alternatives.
    """
    if not resp.logprobs:
        return None
    first = next((t for t in resp.logprobs if _norm(t.token)), None)
    if first is None:
        return None
    candidates = dict(first.top)
    candidates.setdefault(first.token, first.logprob)
    p_yes = sum(math.exp(lp) for tok, lp in candidates.items() if _norm(tok) == "yes")
    p_no = sum(math.exp(lp) for tok, lp in candidates.items() if _norm(tok) == "no")
    if p_yes + p_no <= 0.0:
        return None
    return p_yes / (p_yes + p_no)
