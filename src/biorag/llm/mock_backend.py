"""A scripted backend for tests and demos: no model, deterministic answers and token counts.

A script is a list of rules (a JSON list, or JSONL with one rule per line)::

    {"match": "regex on the last user message", "stage": "extract",
     "response": "text, or any JSON value (sent as its JSON text)",
     "logprobs": {"Yes": -0.1, "No": -2.4}, "once": true}

The first rule whose ``match`` (``re.search``, optional) and ``stage`` (optional) fit wins.
A ``once`` rule is consumed by its first use, so a test can script a malformed answer followed
by a good one. A rule may instead carry ``"error": "retryable"`` or ``"error": "fatal"`` (with
an optional ``"message"``) to simulate failures, and ``"seconds"`` to answer that much later (a
slow model). Tokens are counted by whitespace split.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biorag.errors import ConfigError, LLMError
from biorag.llm.base import RetryableLLMError, attach_parsed, word_count
from biorag.llm.types import ChatRequest, ChatResponse, TokenLogprob


@dataclass
class MockRule:
    """One scripted answer and when it applies."""

    response: str = ""
    match: re.Pattern[str] | None = None
    stage: str | None = None
    logprobs: dict[str, float] | None = None
    once: bool = False
    error: str | None = None
    message: str = ""
    seconds: float = 0.0
    used: bool = field(default=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> MockRule:
        """Build a rule from its script form, checking keys and the regex."""
        allowed = {"match", "stage", "response", "logprobs", "once", "error", "message", "seconds"}
        unknown = set(d) - allowed
        if unknown:
            raise ConfigError(f"mock rule has unknown keys {sorted(unknown)}: {d!r}")
        if "response" not in d and "error" not in d:
            raise ConfigError(f"mock rule needs 'response' or 'error': {d!r}")
        if d.get("error") not in (None, "retryable", "fatal"):
            raise ConfigError(f"mock rule 'error' must be 'retryable' or 'fatal': {d!r}")
        response = d.get("response", "")
        if not isinstance(response, str):
            response = json.dumps(response, ensure_ascii=False)
        try:
            pattern = re.compile(d["match"], re.S) if d.get("match") else None
        except re.error as e:
            raise ConfigError(f"mock rule has an invalid regex {d['match']!r}: {e}") from e
        return cls(
            response=response,
            match=pattern,
            stage=d.get("stage"),
            logprobs=d.get("logprobs"),
            once=bool(d.get("once", False)),
            error=d.get("error"),
            message=d.get("message", ""),
            seconds=float(d.get("seconds", 0.0)),
        )

    def identity(self) -> list[Any]:
        """What the rule answers and when, as plain data (hashed into the mock's model id)."""
        pattern = self.match.pattern if self.match else None
        return [pattern, self.stage, self.response, self.logprobs, self.once, self.error]

    def fits(self, req: ChatRequest) -> bool:
        if self.once and self.used:
            return False
        if self.stage is not None and self.stage != req.stage:
            return False
        return self.match is None or self.match.search(req.last_user_message()) is not None


def load_mock_script(path: str | Path) -> list[dict[str, Any]]:
    """Read a script file: a JSON list of rules, or JSONL (blank and ``#`` lines skipped)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(f"mock script {p} does not exist; set llm.mock_script to a JSON file")
    text = p.read_text(encoding="utf-8")
    try:
        if text.lstrip().startswith("["):
            rules = json.loads(text)
        else:
            rules = [
                json.loads(line)
                for line in text.splitlines()
                if line.strip() and not line.lstrip().startswith("#")
            ]
    except json.JSONDecodeError as e:
        raise ConfigError(f"mock script {p} is not valid JSON/JSONL: {e}") from e
    if not isinstance(rules, list) or not all(isinstance(r, dict) for r in rules):
        raise ConfigError(f"mock script {p} must be a list of rule objects")
    return rules


class MockBackend:
    """Answers from scripted rules or a ``callable(request) -> str``.

    ``model`` defaults to ``mock-<hash of the rules>`` so an edited script never replays stale
    cached answers; a callable responder makes the backend uncacheable (``cacheable=False``).
    """

    name = "mock"

    def __init__(
        self,
        rules: Sequence[dict[str, Any] | MockRule] | None = None,
        responder: Callable[[ChatRequest], str] | None = None,
        model: str | None = None,
    ) -> None:
        if rules is None and responder is None:
            raise ConfigError("MockBackend needs rules or a responder callable")
        self.rules = [r if isinstance(r, MockRule) else MockRule.from_dict(r) for r in rules or []]
        self.responder = responder
        self.cacheable = responder is None
        digest = hashlib.sha256(
            json.dumps([r.identity() for r in self.rules], sort_keys=True).encode()
        ).hexdigest()
        self.model = model or ("mock-callable" if responder else f"mock-{digest[:12]}")
        self.calls: list[ChatRequest] = []

    @classmethod
    def from_file(cls, path: str | Path, model: str | None = None) -> MockBackend:
        """A backend scripted by the JSON/JSONL file at ``path``."""
        return cls(rules=load_mock_script(path), model=model)

    def __repr__(self) -> str:
        return f"MockBackend(model={self.model!r}, rules={len(self.rules)})"

    def _pick(self, req: ChatRequest) -> MockRule | None:
        for rule in self.rules:
            if rule.fits(req):
                rule.used = True
                return rule
        return None

    async def chat(self, req: ChatRequest) -> ChatResponse:
        """Answer from the first fitting rule (or the responder); LLMError when none fits."""
        self.calls.append(req)
        rule = self._pick(req)
        top: dict[str, float] | None = None
        if rule is not None:
            if rule.seconds > 0:
                import asyncio

                await asyncio.sleep(rule.seconds)  # cancellable, as a model request is
            if rule.error == "retryable":
                raise RetryableLLMError(rule.message or "mock: scripted retryable failure")
            if rule.error == "fatal":
                raise LLMError(rule.message or "mock: scripted failure")
            text, top = rule.response, rule.logprobs
        elif self.responder is not None:
            text = self.responder(req)
        else:
            head = req.last_user_message()[:80].replace("\n", " ")
            raise LLMError(
                f"mock backend: no scripted response for stage {req.stage!r}; "
                f"the prompt starts {head!r}. Add a rule to the mock script."
            )
        resp = ChatResponse(
            text=text,
            prompt_tokens=sum(word_count(m["content"]) for m in req.messages),
            completion_tokens=word_count(text),
            latency_s=0.0,
            logprobs=_mock_logprobs(text, top) if req.logprobs else None,
            model=self.model,
            backend=self.name,
            finish_reason="stop",
        )
        return attach_parsed(req, resp)


def _mock_logprobs(text: str, top: dict[str, float] | None) -> list[TokenLogprob]:
    """Per-word logprobs: the first word gets the scripted alternatives, the rest 0.0."""
    words = text.split() or [""]
    out = []
    for i, w in enumerate(words):
        alts = dict(top) if (i == 0 and top) else {}
        out.append(TokenLogprob(token=w, logprob=alts.get(w, 0.0), top=alts))
    return out
