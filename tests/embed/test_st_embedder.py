"""The real bundled all-MiniLM-L6-v2, loaded offline; name resolution; lazy imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from biorag.embed.base import Embedder
from biorag.embed.st_embedder import BUNDLED_NAME, SentenceTransformerEmbedder, resolve_model
from biorag.errors import BioragError


@pytest.mark.slow
def test_minilm_embeds_unit_vectors(minilm: SentenceTransformerEmbedder) -> None:
    sentences = [
        "Metformin lowers blood glucose in type 2 diabetes.",
        "Metformin reduces blood sugar levels in diabetic patients.",
        "The Eiffel Tower is in Paris.",
    ]
    v = minilm.embed(sentences)
    assert isinstance(minilm, Embedder)
    assert minilm.model_id == "sentence-transformers:all-MiniLM-L6-v2"
    assert v.shape == (3, 384) and v.dtype == np.float32 and minilm.dim == 384
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert v[0] @ v[1] > v[0] @ v[2] + 0.3
    q = minilm.embed_query(sentences[0])
    assert q.shape == (384,)
    np.testing.assert_allclose(q, v[0], atol=1e-5)
    assert minilm.embed([]).shape == (0, 384)


def test_names_resolve_to_the_bundled_model() -> None:
    for name in (BUNDLED_NAME, f"sentence-transformers/{BUNDLED_NAME}"):
        path, stable = resolve_model(name)
        assert stable == BUNDLED_NAME and (path / "config.json").is_file()
    bundled, _ = resolve_model(BUNDLED_NAME)
    # Reached by its path it keeps the same id, so cache entries are shared.
    assert resolve_model(str(bundled)) == (bundled, BUNDLED_NAME)


def test_other_local_directory_gets_a_fingerprinted_id(tmp_path: Path) -> None:
    model_dir = tmp_path / "my-model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text('{"hidden_size": 8}')
    e = SentenceTransformerEmbedder(model_dir)
    assert e.model_id.startswith("sentence-transformers:my-model@")
    (model_dir / "config.json").write_text('{"hidden_size": 16}')
    assert SentenceTransformerEmbedder(model_dir).model_id != e.model_id


def test_unknown_name_is_a_clear_error() -> None:
    with pytest.raises(BioragError, match=r"cannot be downloaded.*local"):
        SentenceTransformerEmbedder("BAAI/bge-large-en-v1.5")


def test_importing_embed_does_not_import_torch() -> None:
    code = (
        "import sys, biorag.embed, biorag.embed.st_embedder, biorag.embed.factory; "
        "from biorag.embed import build_embedder; from biorag.config import EmbedSettings; "
        "build_embedder(EmbedSettings()); "
        "print('torch' in sys.modules or 'sentence_transformers' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.slow
def test_the_pipelined_encoder_reproduces_sentence_transformers(
    minilm: SentenceTransformerEmbedder,
) -> None:
    from biorag.embed.st_pipeline import PipelinedEncoder

    long = " ".join(f"word{i} metformin glucose" for i in range(200))  # > 256 tokens: truncated
    texts = [
        "  Metformin lowers blood glucose.  ",  # stripped, as sentence-transformers does
        long,
        "BRCA1 mutations raise the risk of breast cancer.",
        "x",
        "The Eiffel Tower is in Paris; aspirin reduces fever (p < 0.05).",
    ] * 3
    plain = SentenceTransformerEmbedder(minilm.path, batch_size=4, pipeline="off").embed(texts)
    piped_embedder = SentenceTransformerEmbedder(minilm.path, batch_size=4, pipeline="on")
    piped = piped_embedder.embed(texts)
    assert PipelinedEncoder.for_model(piped_embedder._load(), texts) is not None
    assert piped.shape == plain.shape == (15, 384)
    np.testing.assert_allclose(piped, plain, atol=2e-5)  # same vectors, in the input order
    # the CPU default ("auto") keeps sentence-transformers' own encode
    assert SentenceTransformerEmbedder(minilm.path).pipeline == "auto"


def test_the_pipelined_encoder_refuses_a_model_it_cannot_reproduce() -> None:
    from biorag.embed.st_pipeline import PipelinedEncoder

    class NotATransformer:
        def __getitem__(self, i: int) -> object:
            return object()

    assert PipelinedEncoder.for_model(NotATransformer(), ["x"]) is None
    with pytest.raises(BioragError, match="pipeline"):
        SentenceTransformerEmbedder(BUNDLED_NAME, pipeline="sometimes")
