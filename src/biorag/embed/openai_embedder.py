"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, TEI, vLLM, Ollama).

The API key is read from the environment variable the settings name, sent only as a bearer
header and never logged or put in an error message. The dimension is learnt from the first
response.
"""

from __future__ import annotations

import logging
import os
import time
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np

from biorag.embed.base import empty, l2_normalize
from biorag.errors import BioragError

log = logging.getLogger(__name__)
_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


def embeddings_url(base_url: str) -> str:
    """``<base_url>/embeddings``; a bare ``http://host:port`` gets ``/v1`` first."""
    base = base_url.rstrip("/")
    if urlsplit(base).path in ("", "/"):
        base += "/v1"
    return base + "/embeddings"


class OpenAIEmbedder:
    """An :class:`~biorag.embed.base.Embedder` calling ``POST {base_url}/embeddings``.

    Texts go in batches of ``batch_size``; 408/429/5xx answers and connection errors are retried
    ``max_retries`` times with exponential backoff. Vectors are re-normalized (some servers do
    not normalize).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        batch_size: int = 64,
        timeout_s: float = 60.0,
        max_retries: int = 3,
        client: httpx.Client | None = None,
    ):
        self.url = embeddings_url(base_url)
        self.model = model
        self.model_id = f"openai:{model}"
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self.max_retries = max_retries
        self._client = client or httpx.Client(timeout=timeout_s)
        self._dim: int | None = None

    @property
    def dim(self) -> int:
        """Embedding dimension (one probe request if nothing was embedded yet)."""
        if self._dim is None:
            self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def _headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _post(self, batch: list[str]) -> list[list[float]]:
        payload = {"model": self.model, "input": batch, "encoding_format": "float"}
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt:
                time.sleep(min(0.5 * 2 ** (attempt - 1), 8.0))
            try:
                resp = self._client.post(self.url, json=payload, headers=self._headers())
            except httpx.HTTPError as e:
                last = f"{type(e).__name__}: {e}"
                log.warning("embedding request to %s failed (%s), retrying", self.url, last)
                continue
            if resp.status_code in _RETRY_STATUS:
                last = f"HTTP {resp.status_code}: {resp.text[:200]}"
                log.warning("embedding request to %s: %s, retrying", self.url, last)
                continue
            if resp.status_code != 200:
                raise BioragError(
                    f"embedding endpoint {self.url} answered HTTP {resp.status_code}: "
                    f"{resp.text[:300]}; check embed.base_url, embed.model and the key in "
                    f"${self.api_key_env}"
                )
            return self._parse(resp, len(batch))
        raise BioragError(
            f"embedding endpoint {self.url} failed after {self.max_retries + 1} attempts ({last})"
        )

    def _parse(self, resp: httpx.Response, n: int) -> list[list[float]]:
        try:
            data: Any = resp.json()["data"]
            rows = sorted(data, key=lambda d: d.get("index", 0))
            vectors = [list(map(float, r["embedding"])) for r in rows]
        except (ValueError, KeyError, TypeError) as e:
            raise BioragError(
                f"embedding endpoint {self.url} answered something that is not an OpenAI "
                f"embeddings response ({type(e).__name__}: {e})"
            ) from None
        if len(vectors) != n:
            raise BioragError(
                f"embedding endpoint {self.url} returned {len(vectors)} vectors for {n} texts"
            )
        return vectors

    def embed(
        self, texts: list[str], *, batch_size: int | None = None, show_progress: bool = False
    ) -> np.ndarray:
        """Normalized float32 vectors for ``texts``, shape ``(len(texts), dim)``."""
        if not texts:
            return empty(self._dim or 0)
        size = batch_size or self.batch_size
        starts = range(0, len(texts), size)
        if show_progress:
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc="embed", unit="batch")
        parts: list[np.ndarray] = []
        for start in starts:
            vectors = np.asarray(self._post(list(texts[start : start + size])), dtype=np.float32)
            if vectors.ndim != 2:
                raise BioragError(f"embedding endpoint {self.url} returned ragged vectors")
            if self._dim is None:
                self._dim = int(vectors.shape[1])
            elif vectors.shape[1] != self._dim:
                raise BioragError(
                    f"embedding endpoint {self.url} returned dimension {vectors.shape[1]}, "
                    f"earlier {self._dim}"
                )
            parts.append(l2_normalize(vectors))
        return np.concatenate(parts, axis=0)

    def embed_query(self, text: str) -> np.ndarray:
        """The vector of one query, shape ``(dim,)``."""
        return self.embed([text])[0]

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.model_id!r}, url={self.url!r})"
