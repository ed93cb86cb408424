"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, TEI, vLLM, Ollama,
llama.cpp's ``llama-server --embeddings --pooling mean``).

The API key is read from the environment variable the settings name, sent only as a bearer
header and never logged or put in an error message. The dimension is learnt from the first
response and remembered in ``<state_dir>/openai_dims.json`` (keyed by endpoint and model), so a
later process that needs it before embedding anything (opening an index checks it) sends no
probe request. Vectors are L2-normalized here (llama-server may return unnormalized ones).

Every failure a user can fix is a one-line :class:`~biorag.errors.BioragError` naming the
setting to change: nothing listening at ``embed.base_url``, a web page instead of the API, a
model the server does not serve (``embed.model``), a rejected key, a text longer than the
server's batch. The HTTP it shares with the chat backend (the key header, the timeouts, reading
an error body, telling a web page from the API) is :mod:`biorag.util.openai_http`'s.
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from biorag.embed.base import empty, l2_normalize
from biorag.errors import BioragError
from biorag.util.files import write_json_atomic
from biorag.util.openai_http import (
    Timeouts,
    api_base,
    bearer_headers,
    error_body,
    looks_like_html,
)
from biorag.util.secrets import mask_url

log = logging.getLogger(__name__)
_RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}


class _Transient(Exception):
    """A failed embedding request that a retry may cure (its message says what failed)."""


DIMS_FILE = "openai_dims.json"
_dims_lock = threading.Lock()


def embeddings_url(base_url: str) -> str:
    """``<base_url>/embeddings``; a bare ``http://host:port`` gets ``/v1`` first."""
    return api_base(base_url) + "/embeddings"


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _server_message(resp: httpx.Response) -> str:
    """The error message of an error answer, on one line (read by
    :func:`~biorag.util.openai_http.error_body`, without any credential the request carried)."""
    return _one_line(error_body(resp)[0])


class OpenAIEmbedder:
    """An :class:`~biorag.embed.base.Embedder` calling ``POST {base_url}/embeddings``.

    Texts go in batches of ``batch_size``; 408/429/5xx answers and timeouts are retried
    ``max_retries`` times with exponential backoff. A refused connection fails at once (nothing
    listens at ``embed.base_url``) unless the server has answered before in this process (then
    it is retried like the rest: a restart). Connecting may take ``connect_timeout_s``; reading
    an answer ``timeout_s`` plus ``per_text_timeout_s`` per text of the batch.
    ``state_dir``: where the dimension is remembered (None: not remembered; one probe request
    when :attr:`dim` is read before anything was embedded).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        batch_size: int = 64,
        timeout_s: float = 30.0,
        per_text_timeout_s: float = 5.0,
        connect_timeout_s: float = 5.0,
        max_retries: int = 3,
        client: httpx.Client | None = None,
        state_dir: str | Path | None = None,
    ):
        self.base_url = base_url
        self.url = embeddings_url(base_url)
        self.model = model
        self.model_id = f"openai:{model}"
        self.api_key_env = api_key_env
        self.batch_size = batch_size
        self.max_retries = max_retries
        self.timeouts = Timeouts(timeout_s, per_text_timeout_s, connect_timeout_s)
        self._client = client or httpx.Client()
        self._dim: int | None = None
        self._dim_remembered = False  # _dim came from the state file, not from this server
        self._answered = False  # the server answered once in this process
        self.dims_path = Path(state_dir) / DIMS_FILE if state_dir is not None else None
        self.probes = 0  # dimension probe requests sent

    # -- the dimension -----------------------------------------------------------------------
    @property
    def _dims_key(self) -> str:
        return f"{mask_url(self.url)} {self.model}"

    def _read_dims(self) -> dict[str, Any]:
        if self.dims_path is None or not self.dims_path.is_file():
            return {}
        try:
            data = json.loads(self.dims_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _remember_dim(self, dim: int) -> None:
        if self.dims_path is None:
            return
        with _dims_lock:
            dims = self._read_dims()
            if dims.get(self._dims_key) == dim:
                return
            dims[self._dims_key] = dim
            try:
                self.dims_path.parent.mkdir(parents=True, exist_ok=True)
                write_json_atomic(self.dims_path, dims)
            except OSError as e:  # a read-only home: the next process probes again
                log.warning("cannot remember the embedding dimension in %s: %s", self.dims_path, e)

    @property
    def dim(self) -> int:
        """Embedding dimension: learnt from the first answer, remembered across processes; one
        probe request only when neither is there."""
        if self._dim is None:
            remembered = self._read_dims().get(self._dims_key)
            if isinstance(remembered, int) and not isinstance(remembered, bool) and remembered > 0:
                self._dim, self._dim_remembered = remembered, True
            else:
                self.probes += 1
                self.embed(["dimension probe"])
        assert self._dim is not None
        return self._dim

    def _check_dim(self, dim: int) -> None:
        if self._dim is None:
            self._dim = dim
            self._remember_dim(dim)
            return
        if dim == self._dim:
            if self._dim_remembered:
                self._dim_remembered = False  # confirmed by the server
            return
        if self._dim_remembered:
            old = self._dim
            self._dim, self._dim_remembered = dim, False
            self._remember_dim(dim)
            raise BioragError(
                f"the embedding server at {mask_url(self.url)} now returns {dim}-dimensional "
                f"vectors for embed.model {self.model!r}, not the {old} of earlier runs: another "
                "model is served under that name; give embed.model a name of its own for it (the "
                "embedding cache and indexes are keyed by it) or serve the earlier model"
            )
        raise BioragError(
            f"embedding endpoint {mask_url(self.url)} returned dimension {dim}, earlier "
            f"{self._dim}; check embed.model"
        )

    # -- requests ----------------------------------------------------------------------------
    def _post(self, batch: list[str]) -> list[list[float]]:
        """One batch's vectors; transient failures are retried (tenacity) with exponential
        backoff (0.5 s doubling, at most 8 s) up to ``max_retries`` times."""
        from tenacity import Retrying, retry_if_exception_type, stop_after_attempt
        from tenacity import wait_exponential as backoff

        retrying = Retrying(
            retry=retry_if_exception_type(_Transient),
            stop=stop_after_attempt(self.max_retries + 1),
            wait=backoff(multiplier=0.5, max=8.0),
            before_sleep=lambda state: log.warning(
                "embedding request to %s failed (%s), retrying",
                mask_url(self.url),
                state.outcome.exception() if state.outcome else "",
            ),
            reraise=True,
        )
        try:
            return retrying(self._attempt, batch)
        except _Transient as e:
            hint = "; a slow server: lower embed.batch_size" if "timeout" in str(e) else ""
            raise BioragError(
                f"embedding endpoint {mask_url(self.url)} failed after {self.max_retries + 1} "
                f"attempts ({e}){hint}; check embed.base_url"
            ) from None

    def _attempt(self, batch: list[str]) -> list[list[float]]:
        """One request: the vectors, a :class:`BioragError` no retry cures, or
        :class:`_Transient` naming what failed."""
        payload = {"model": self.model, "input": batch, "encoding_format": "float"}
        where = mask_url(self.url)
        try:
            resp = self._client.post(
                self.url,
                json=payload,
                headers=bearer_headers(self.api_key_env),
                timeout=self.timeouts.for_request(len(batch)),
            )
        except httpx.ConnectError as e:
            if not self._answered:
                raise BioragError(
                    f"cannot connect to the embedding server at {where} ({_one_line(str(e))}); "
                    f"start it, or set embed.base_url (now {mask_url(self.base_url)!r})"
                ) from None
            raise _Transient(f"{type(e).__name__}: {_one_line(str(e))}") from None
        except httpx.TimeoutException as e:
            kind = "connect" if isinstance(e, httpx.ConnectTimeout) else "answer"
            if kind == "connect" and not self._answered:
                raise BioragError(
                    f"the embedding server at {where} did not accept a connection within "
                    f"{self.timeouts.connect_s:g}s; check embed.base_url "
                    f"(now {mask_url(self.base_url)!r})"
                ) from None
            raise _Transient(f"no {kind} within the timeout ({type(e).__name__})") from None
        except httpx.HTTPError as e:
            raise _Transient(f"{type(e).__name__}: {_one_line(str(e))}") from None
        self._answered = True
        if resp.status_code in _RETRY_STATUS and not self._fatal_server_error(resp):
            raise _Transient(f"HTTP {resp.status_code}: {_server_message(resp)}")
        return self._handle(resp, len(batch))

    def _fatal_server_error(self, resp: httpx.Response) -> bool:
        """A 5xx that no retry cures (llama-server: a text longer than its batch)."""
        return "too large to process" in resp.text

    def _handle(self, resp: httpx.Response, n: int) -> list[list[float]]:
        where = mask_url(self.url)
        base = f"embed.base_url (now {mask_url(self.base_url)!r})"
        if resp.status_code == 200:
            if looks_like_html(resp):
                raise BioragError(
                    f"{where} answered a web page, not an OpenAI-compatible embeddings API; set "
                    f"{base} to the API root, e.g. http://localhost:8080/v1"
                )
            return self._parse(resp, n)
        message = _server_message(resp)
        status = resp.status_code
        if "too large to process" in message:
            raise BioragError(
                f"the embedding server at {where} refused a text longer than its batch "
                f"({message}); start llama-server with a larger batch (-b and -ub at least "
                "chunking.max_chunk_tokens, e.g. -b 2048 -ub 2048), or lower chunking.chunk_tokens"
            )
        if "does not support embeddings" in message or "pooling type" in message.lower():
            raise BioragError(
                f"the server at {where} does not serve embeddings ({message}); start llama-server "
                f"with --embeddings --pooling mean, or point {base} at an embeddings server"
            )
        if status in (401, 403):
            raise BioragError(
                f"embedding endpoint {where} answered HTTP {status} ({message}); check the key in "
                f"${self.api_key_env}"
            )
        if status in (400, 404, 422) and "model" in message.lower() and not looks_like_html(resp):
            raise BioragError(
                f"the embedding server at {where} does not serve embed.model {self.model!r} "
                f"(HTTP {status}: {message}); set embed.model to a model it serves"
            )
        if looks_like_html(resp) or status in (404, 405):
            raise BioragError(
                f"{where} is not an OpenAI-compatible embeddings endpoint (HTTP {status}); set "
                f"{base} to the API root, e.g. http://localhost:8080/v1"
            )
        raise BioragError(
            f"embedding endpoint {where} answered HTTP {status}: {message}; check "
            f"embed.base_url, embed.model and the key in ${self.api_key_env}"
        )

    def _parse(self, resp: httpx.Response, n: int) -> list[list[float]]:
        where = mask_url(self.url)
        try:
            data: Any = resp.json()["data"]
            rows = sorted(data, key=lambda d: d.get("index", 0))
            raw = [r["embedding"] for r in rows]
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            raise BioragError(
                f"{where} answered something that is not an OpenAI embeddings response "
                f"({type(e).__name__}: {_one_line(str(e), 80)}); check embed.base_url"
            ) from None
        if any(isinstance(v, list) and v and isinstance(v[0], list) for v in raw):
            raise BioragError(
                f"{where} returned one vector per token, not per text; start llama-server with "
                "--pooling mean (or cls/last)"
            )
        try:
            vectors = [list(map(float, v)) for v in raw]
        except (TypeError, ValueError) as e:
            raise BioragError(
                f"{where} returned embeddings that are not lists of numbers ({e}); "
                "check embed.base_url"
            ) from None
        if len(vectors) != n:
            raise BioragError(
                f"embedding endpoint {where} returned {len(vectors)} vectors for {n} texts"
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
            from biorag.util.progress import progress

            starts = progress(starts, "embed", unit="batch")  # type: ignore[assignment]
        parts: list[np.ndarray] = []
        for start in starts:
            rows = self._post(list(texts[start : start + size]))
            if len({len(r) for r in rows}) != 1 or not rows[0]:
                raise BioragError(
                    f"embedding endpoint {mask_url(self.url)} returned ragged vectors"
                )
            vectors = np.asarray(rows, dtype=np.float32)
            self._check_dim(int(vectors.shape[1]))
            parts.append(l2_normalize(vectors))
        return np.concatenate(parts, axis=0)

    def embed_query(self, text: str) -> np.ndarray:
        """The vector of one query, shape ``(dim,)``."""
        return self.embed([text])[0]

    def close(self) -> None:
        """Close the HTTP client."""
        self._client.close()

    def __repr__(self) -> str:
        return f"OpenAIEmbedder({self.model_id!r}, url={mask_url(self.url)!r})"
