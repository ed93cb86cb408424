"""The small MeSH / UniProt samples (devkit/strata_vocab.py) written into tmp_path, a mock LLM
helper, three papers."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from devkit.strata_vocab import MESH_XML, UNIPROT_TSV

from biorag.llm import LLM, MockBackend
from biorag.strata.vocab import load_vocabulary

PAPERS = [
    {
        "pid": "P1",
        "title": "Trastuzumab in HER2-positive breast cancer",
        "abstract": "In this randomized controlled trial of 400 women, Trastuzumab targets "
        "ERBB2. Trastuzumab treats Breast Cancer. Data came from the METABRIC dataset.",
        "year": 2020,
        "keywords": ["oncology"],
        "citations": ["P2"],
    },
    {
        "pid": "P2",
        "title": "ERBB2 amplification",
        "abstract": "ERBB2 activates TP53. TP53 is associated with Breast Cancer. "
        "We used RNA-seq on the TCGA database.",
        "year": 2018,
        "keywords": ["oncology"],
    },
    {
        "pid": "P3",
        "title": "Metformin and glycaemic control",
        "abstract": "A prospective cohort study found that Metformin treats Type 2 Diabetes. "
        "Metformin is associated with CAD.",
        "year": 2021,
        "keywords": ["endocrinology"],
        "citations": ["X9"],
    },
]


class TrigramEmbedder:
    """Character trigrams of each word hashed into 512 dims: tiny, deterministic, few clashes."""

    model_id = "test:trigram-512"
    dim = 512

    def embed(self, texts, *, batch_size=None, show_progress=False):
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                w = f"#{w}#"
                for k in range(len(w) - 2):
                    out[i, int(hashlib.md5(w[k : k + 3].encode()).hexdigest(), 16) % 512] += 1
            out[i, 0] += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def embed_query(self, text):
        return self.embed([text])[0]


@pytest.fixture
def emb():
    return TrigramEmbedder()


@pytest.fixture
def vocab_files(tmp_path):
    mesh, uni = tmp_path / "desc.xml", tmp_path / "uniprot.tsv"
    mesh.write_text(MESH_XML, encoding="utf-8")
    uni.write_text(UNIPROT_TSV, encoding="utf-8")
    return mesh, uni


@pytest.fixture
def vocab(vocab_files):
    return load_vocabulary(*vocab_files)


@pytest.fixture
def mock_llm():
    def make(rules):
        return LLM(MockBackend(rules=rules), max_retries=0, retry_base_delay=0.0)

    return make


@pytest.fixture
def papers():
    return [dict(p) for p in PAPERS]
