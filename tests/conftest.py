"""Shared fixtures: a fast deterministic embedder, small corpora, the shared data folder."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.graph_server import LiveNeo4j, live_neo4j

#: the suite's order and its cost, reported at the end of every run
pytest_plugins = ["tests.timing_report"]

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
    from biorag.runtime import Runtime

    given: dict = {}

    def open_runtime(index_paths=None):
        return Runtime(common.STATE.settings(), index_paths, **given)

    monkeypatch.setattr(common, "open_runtime", open_runtime)
    return given.update


class ReaderSpy:
    """A dry-run model whose reader answers ``letter`` (the last option of a yes/no/maybe
    question by default, so a method that ignores the model's answer, or falls back to the
    first option, fails) and keeps the prompt of every reader call."""

    def __init__(self, letter: str = "C") -> None:
        self.letter = letter
        self.prompts: list[str] = []

    def __call__(self, req):
        from biorag.llm.dry_run import dry_run_responder

        if req.stage == "answer":
            self.prompts.append(req.last_user_message())
            if req.json_schema is not None:
                return json.dumps({"reasoning": "the passages", "answer": self.letter})
            return f"The passages support option {self.letter}."
        if req.stage == "answer_extract":
            return json.dumps({"answer": self.letter})
        return dry_run_responder(req)

    def client(self, settings):
        """An LLM client of ``settings`` (cache, retries, accounting) over this model."""
        from biorag.llm import build_llm
        from biorag.llm.mock_backend import MockBackend

        return build_llm(settings, backend=MockBackend(responder=self, model="reader-spy"))

    def read(self, text: str) -> bool:
        """Whether the reader prompts quoted ``text`` (whitespace aside; a context of several
        passages, blank-line separated, passage by passage: each is a block of its own)."""
        prompts = [" ".join(p.split()) for p in self.prompts]
        parts = [" ".join(t.split()) for t in text.split("\n\n")]
        parts = [t for t in parts if len(t) > 20] or [" ".join(text.split())]
        return all(any(t in p for p in prompts) for t in parts)


@pytest.fixture
def reader_spy() -> ReaderSpy:
    return ReaderSpy()


@pytest.fixture
def index_of(tmp_path, hash_embedder):
    """``index_of(docs, name)``: an index at ``tmp_path/idx`` of ``docs`` (JSON Lines records)
    embedded with the hash embedder."""
    from biorag.corpus.loaders import load_corpus
    from biorag.retrieve.index import IndexDir

    def build(docs: list[dict], name: str) -> Path:
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(d) + "\n" for d in docs))
        idx = IndexDir(tmp_path / "idx", hash_embedder, name=name)
        idx.add(load_corpus(path))
        idx.close()
        return tmp_path / "idx"

    return build


@pytest.fixture(scope="session")
def neo4j_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveNeo4j]:
    """A live Bolt/openCypher server for the session (see tests/graph_server.py), or a skip."""
    yield from live_neo4j(tmp_path_factory.mktemp("arcadedb"))


@pytest.fixture(scope="session")
def milvus_live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A live Milvus server's URI (milvus-lite on loopback, or BIORAG_TEST_MILVUS_URI)."""
    from tests.milvus_server import milvus_uri

    yield from milvus_uri(tmp_path_factory)


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local Ray head and two one-CPU worker nodes on loopback (tests/ray_cluster.py)."""
    from tests.ray_cluster import ray_cluster as start

    yield from start(tmp_path_factory)


@pytest.fixture(scope="session")
def converted(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """SmolLM2 converted from its GGUF file into a fresh home and loaded, once for the session
    (tests/smol_hf.py; the in-process tests and the CLI's in-process run share the home)."""
    from tests.smol_hf import convert

    return convert(tmp_path_factory.mktemp("smol-home"))
