"""The LLM layer: one async chat interface over several backends, with cache and accounting.

Build a client from settings and ask it things::

    llm = build_llm(settings)            # None when llm.backend = "none"
    resp = await llm.chat(ChatRequest(messages=[...], stage="extract", json_schema=schema))
    resp.parsed, resp.parse_error        # the JSON value, or why there is none
    llm.accounting.report()              # per-stage calls, hits, tokens, latency, failures

Backends (``llm.backend``): ``openai`` (any OpenAI-compatible server over HTTP), ``hf`` (a local
transformers model in-process), ``mock`` (scripted answers for tests and demos). The client
composes, outermost first: SQLite cache -> retry with backoff -> concurrency limit ->
accounting -> backend. Answers to JSON requests are parsed leniently
(:func:`parse_json_lenient`); judges read yes/no token probabilities with
:func:`yes_no_probability`. Prompts are ``.txt`` files loaded with :class:`PromptTemplate`
(``$name`` placeholders); their version enters the cache key.
"""

from biorag.llm.accounting import Accounting, StageStats
from biorag.llm.base import ChatModel, LLMBackend, RetryableLLMError
from biorag.llm.cache import SQLiteCache, cache_key
from biorag.llm.factory import LLM, build_llm, make_backend
from biorag.llm.jsonparse import parse_json_lenient
from biorag.llm.mock_backend import MockBackend
from biorag.llm.prompts import PromptTemplate
from biorag.llm.types import ChatRequest, ChatResponse, TokenLogprob, yes_no_probability

__all__ = [
    "LLM",
    "Accounting",
    "ChatModel",
    "ChatRequest",
    "ChatResponse",
    "LLMBackend",
    "MockBackend",
    "PromptTemplate",
    "RetryableLLMError",
    "SQLiteCache",
    "StageStats",
    "TokenLogprob",
    "build_llm",
    "cache_key",
    "make_backend",
    "parse_json_lenient",
    "yes_no_probability",
]
