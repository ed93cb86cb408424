"""The OpenAI embedder against a real ``llama-server --embeddings --pooling mean`` (SmolLM2's
hidden states, mean-pooled: a real server and real vectors, not a good embedding model)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from devkit.servers import LlamaServer
from tests.real_llm.conftest import DEMO, biorag

pytestmark = pytest.mark.real_llm


@pytest.fixture(scope="module")
def embed_server(llama_bin: Path, smol_gguf: Path, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[LlamaServer]:  # fmt: skip
    log = tmp_path_factory.mktemp("embed") / "server.log"
    server = LlamaServer(llama_bin, smol_gguf, ctx=2048, parallel=2, embeddings=True, log_path=log)
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


def test_index_and_search_through_the_embeddings_server(
    embed_server: LlamaServer, tmp_path: Path
) -> None:
    corpus = tmp_path / "c.jsonl"
    corpus.write_text(
        "\n".join((DEMO / "pubmedqa_sample.jsonl").read_text().splitlines()[:12]) + "\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("BIORAG_")}
    env.update(
        BIORAG_HOME=str(tmp_path / "home"),
        BIORAG_PROGRESS="0",
        BIORAG_EMBED_BACKEND="openai",
        BIORAG_EMBED_BASE_URL=embed_server.url,
        BIORAG_EMBED_MODEL="smollm2-135m",
        BIORAG_EMBED_BATCH_SIZE="8",  # a CPU server embeds ~1,000-token chunks a few per second
    )
    idx = tmp_path / "idx"
    r = biorag(["index", "build", "--corpus", str(corpus), "--out", str(idx)], env)
    assert r["rc"] == 0, r["stderr"][-2000:]
    manifest = json.loads((idx / "manifest.json").read_text())
    assert manifest["dim"] == 576  # SmolLM2-135M hidden size
    first = json.loads(corpus.read_text().splitlines()[0])
    q = tmp_path / "q.jsonl"
    q.write_text(json.dumps({"id": "q1", "text": first["text"][:300]}) + "\n")
    out = tmp_path / "run.trec"
    r = biorag(["retrieve", "--index", str(idx), "--queries", str(q), "--k", "3", "--level",
                "doc", "--retriever", "dense", "--out", str(out)], env)  # fmt: skip
    assert r["rc"] == 0, r["stderr"][-2000:]
    top = out.read_text().splitlines()[0].split()
    assert top[2] == first["id"]  # the document's own opening finds it first


def test_embedder_vectors_are_normalized_and_the_dimension_is_remembered(
    embed_server: LlamaServer, tmp_path: Path
) -> None:
    from biorag.embed.openai_embedder import OpenAIEmbedder

    e = OpenAIEmbedder(embed_server.url, "smollm2-135m", state_dir=tmp_path)
    v = e.embed(["aspirin inhibits platelet aggregation", "metformin lowers glucose"])
    assert v.shape == (2, 576)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    again = OpenAIEmbedder(embed_server.url, "smollm2-135m", state_dir=tmp_path)
    assert again.dim == 576 and again.probes == 0
