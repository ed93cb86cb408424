"""Rerankers: rescore retrieved passages against the query.

* :class:`BiEncoderReranker` - cosine of the embedder's vectors (works anywhere; the default).
* :class:`CrossEncoderReranker` - a local ``sentence_transformers.CrossEncoder`` model.
* :class:`LLMJudgeReranker` - an LLM asked whether the passage answers the query; the score is
  P(yes) / (P(yes) + P(no)) from the first token's log-probabilities, the way
  bge-reranker-v2-gemma scores.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

import numpy as np

from biorag.config import RerankSettings
from biorag.embed.base import Embedder
from biorag.errors import BioragError, ConfigError
from biorag.llm.base import ChatModel
from biorag.llm.budget import LOGPROB_ONLY
from biorag.llm.evidence import EVIDENCE_RULE, format_passage
from biorag.llm.types import ChatRequest, yes_no_probability

T = TypeVar("T")

JUDGE_PROMPT = (
    "You check search results. Given a query A and a passage B, decide whether the passage "
    "contains an answer to the query. Reply with exactly one word: 'Yes' or 'No'.\n\n"
    "A: {query}\n\nB:\n{passage}\n\nDoes B contain an answer to A?"
)


@runtime_checkable
class Reranker(Protocol):
    """Scores passages for a query (higher is more relevant)."""

    def score(self, query: str, texts: list[str]) -> np.ndarray:
        """One float score per text."""
        ...

    def rerank(
        self,
        query: str,
        items: Sequence[T],
        key: Callable[[T], str] = str,
        top_k: int | None = None,
    ) -> list[tuple[T, float]]:
        """``(item, score)`` best first, at most ``top_k``."""
        ...


class _RerankMixin:
    """:meth:`rerank` on top of a ``score`` method."""

    def score(self, query: str, texts: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def rerank(
        self,
        query: str,
        items: Sequence[T],
        key: Callable[[T], str] = str,
        top_k: int | None = None,
    ) -> list[tuple[T, float]]:
        """Score ``key(item)`` for each item; return ``(item, score)`` best first (ties keep the
        input order), at most ``top_k`` of them (all when None)."""
        if not items:
            return []
        scores = np.asarray(self.score(query, [key(it) for it in items]), dtype=np.float64)
        order = np.argsort(-scores, kind="stable")
        if top_k is not None:
            order = order[: max(top_k, 0)]
        return [(items[i], float(scores[i])) for i in order]


class BiEncoderReranker(_RerankMixin):
    """Cosine similarity between the query vector and each passage vector."""

    def __init__(self, embedder: Embedder):
        self.embedder = embedder

    def score(self, query: str, texts: list[str]) -> np.ndarray:
        """Cosines in [-1, 1] (the embedder's vectors are normalized)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        q = self.embedder.embed_query(query)
        return (self.embedder.embed(list(texts)) @ q).astype(np.float32)


class CrossEncoderReranker(_RerankMixin):
    """A local cross-encoder model (``sentence_transformers.CrossEncoder``), loaded lazily and
    offline; ``model_path`` must be a directory since nothing can be downloaded."""

    def __init__(self, model_path: str | Path, *, device: str = "cpu", batch_size: int = 32):
        path = Path(model_path).expanduser()
        if not path.is_dir():
            raise BioragError(
                f"cross-encoder model {str(model_path)!r} is not a local directory, and models "
                "cannot be downloaded here; set rerank.model to a local CrossEncoder directory "
                "or use rerank.backend = 'bi-encoder'"
            )
        self.path = path.resolve()
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                import os

                os.environ["HF_HUB_OFFLINE"] = "1"
                os.environ["TRANSFORMERS_OFFLINE"] = "1"
                from sentence_transformers import CrossEncoder

                self._model = CrossEncoder(
                    str(self.path), device=self.device, local_files_only=True
                )
        return self._model

    def score(self, query: str, texts: list[str]) -> np.ndarray:
        """The cross-encoder's relevance score for each (query, text) pair."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        model = self._load()
        scores = model.predict(
            [(query, t) for t in texts], batch_size=self.batch_size, show_progress_bar=False
        )
        return np.asarray(scores, dtype=np.float32).reshape(len(texts))


def _run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from sync code, also when an event loop is already running
    in this thread (then in a helper thread with its own loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as e:
            box["error"] = e

    thread = threading.Thread(target=target, name="biorag-rerank")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


class LLMJudgeReranker(_RerankMixin):
    """Asks ``llm`` (anything with ``async chat_many(list[ChatRequest]) -> list[ChatResponse]``)
    for one token, 'Yes' or 'No', per passage; the score is P(yes) / (P(yes) + P(no)) from the
    top log-probabilities (``biorag.llm.types.yes_no_probability``). A response without usable
    log-probabilities scores ``neutral``. Passages are cut to ``max_passage_chars``."""

    def __init__(self, llm: ChatModel, *, max_passage_chars: int = 4000, neutral: float = 0.5):
        # lazy: biorag.embed imports this module (cycle)
        from biorag.embed import dry_replies  # noqa: F401 - registers its dry-run answer

        self.llm = llm
        self.max_passage_chars = max_passage_chars
        self.neutral = neutral

    def requests(self, query: str, texts: list[str]) -> list[Any]:
        """The ``ChatRequest`` objects sent for ``texts``."""

        return [
            ChatRequest(
                messages=[
                    {"role": "system", "content": EVIDENCE_RULE},
                    {
                        "role": "user",
                        "content": JUDGE_PROMPT.format(
                            query=query.strip(),
                            passage=format_passage("B", t[: self.max_passage_chars]),
                        ),
                    },
                ],
                max_tokens=LOGPROB_ONLY,
                temperature=0,
                logprobs=True,
                top_logprobs=5,
                stage="rerank",
            )
            for t in texts
        ]

    async def ascore(self, query: str, texts: list[str]) -> np.ndarray:
        """P(yes) per text, from one batched ``chat_many`` call."""
        if not texts:
            return np.zeros(0, dtype=np.float32)

        responses = await self.llm.chat_many(self.requests(query, texts))
        if len(responses) != len(texts):
            raise BioragError(f"the LLM answered {len(responses)} of {len(texts)} rerank requests")
        probs = [yes_no_probability(r) for r in responses]
        return np.asarray([self.neutral if p is None else p for p in probs], dtype=np.float32)

    def score(self, query: str, texts: list[str]) -> np.ndarray:
        """P(yes) per text (runs :meth:`ascore` to completion)."""
        return _run_sync(self.ascore(query, texts))


def build_reranker(
    settings: RerankSettings, embedder: Embedder, llm: ChatModel | None = None
) -> Reranker:
    """The reranker ``settings.backend`` names: ``bi-encoder`` (uses ``embedder``),
    ``cross-encoder`` (``settings.model``, a local directory) or ``llm`` (needs ``llm``)."""
    if settings.backend == "bi-encoder":
        return BiEncoderReranker(embedder)
    if settings.backend == "cross-encoder":
        if not settings.model:
            raise ConfigError(
                "rerank.backend 'cross-encoder' needs rerank.model (a local directory)"
            )
        return CrossEncoderReranker(settings.model)
    if settings.backend == "llm":
        if llm is None:
            raise ConfigError(
                "rerank.backend 'llm' needs a language model; set llm.backend (and its endpoint) "
                "or use rerank.backend = 'bi-encoder'"
            )
        return LLMJudgeReranker(llm)
    raise ConfigError(f"unknown rerank.backend {settings.backend!r}")  # pragma: no cover
