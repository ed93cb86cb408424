"""Shared fixtures: a fast deterministic embedder, small corpora, the shared data folder."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO.parent / "shared" / "data"


class HashEmbedder:
    """Bag of words hashed into 64 dimensions, L2-normalised: fast, deterministic, no model.

    Texts that share words are close, which is all the index and search tests need.
    """

    model_id = "test:hash-64"
    dim = 64

    def __init__(self) -> None:
        self.calls: list[int] = []

    def embed(self, texts, *, batch_size=None, show_progress=False):
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in re.findall(r"[a-z0-9]+", t.lower()):
                h = int(hashlib.md5(w.encode()).hexdigest(), 16)
                out[i, h % self.dim] += 1.0
            out[i, 0] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text):
        return self.embed([text])[0]


@pytest.fixture
def hash_embedder() -> HashEmbedder:
    return HashEmbedder()


DOCS = [
    {
        "id": "1001",
        "title": "Metformin and glucose",
        "text": "Metformin reduces hepatic glucose "
        "production in patients with type 2 diabetes. It is the first-line oral therapy.",
    },
    {
        "id": "1002",
        "title": "Statins",
        "text": "Atorvastatin lowers LDL cholesterol and reduces "
        "the risk of myocardial infarction in adults with hypercholesterolemia.",
    },
    {
        "id": "1003",
        "title": "Aspirin",
        "text": "Low-dose aspirin inhibits platelet aggregation. "
        "Aspirin did not reduce mortality in healthy elderly people.",
    },
    {
        "id": "1004",
        "title": "Vitamin D",
        "text": "Vitamin D supplementation showed no significant "
        "effect on fracture risk in community-dwelling adults.",
    },
]


@pytest.fixture
def corpus_file(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in DOCS), encoding="utf-8")
    return path


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is not beside this checkout")
    return SHARED_DATA


@pytest.fixture
def cli_components(monkeypatch):
    """Give the CLI's runtime ready-made components: ``cli_components(embedder=e, llm=None)``
    (``llm=None``: the no-LLM floor); what is not given is built from the settings."""
    from biorag.cli import common
    from biorag.methods.runtime import Runtime

    given: dict = {}

    def open_runtime(index_paths=None):
        return Runtime(common.STATE.settings(), index_paths, **given)

    monkeypatch.setattr(common, "open_runtime", open_runtime)
    return given.update
