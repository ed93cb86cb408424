"""Small MeSH / UniProt samples written into tmp_path, a mock LLM helper, three papers."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from biorag.llm import LLM, MockBackend
from biorag.strata.vocab import load_vocabulary

MESH_XML = """<?xml version="1.0"?>
<DescriptorRecordSet LanguageCode="eng">
 <DescriptorRecord><DescriptorUI>D003924</DescriptorUI>
  <DescriptorName><String>Diabetes Mellitus, Type 2</String></DescriptorName>
  <TreeNumberList><TreeNumber>C18.452.394.750.149</TreeNumber></TreeNumberList>
  <ConceptList><Concept><TermList>
   <Term><String>Diabetes Mellitus, Type 2</String></Term>
   <Term><String>Type 2 Diabetes</String></Term><Term><String>T2D</String></Term>
  </TermList></Concept></ConceptList></DescriptorRecord>
 <DescriptorRecord><DescriptorUI>D003324</DescriptorUI>
  <DescriptorName><String>Coronary Artery Disease</String></DescriptorName>
  <TreeNumberList><TreeNumber>C14.280.647.250.260</TreeNumber></TreeNumberList>
  <ConceptList><Concept><TermList>
   <Term><String>Coronary Artery Disease</String></Term><Term><String>CAD</String></Term>
  </TermList></Concept></ConceptList></DescriptorRecord>
 <DescriptorRecord><DescriptorUI>D001943</DescriptorUI>
  <DescriptorName><String>Breast Neoplasms</String></DescriptorName>
  <TreeNumberList><TreeNumber>C04.588.180</TreeNumber></TreeNumberList>
  <ConceptList><Concept><TermList>
   <Term><String>Breast Neoplasms</String></Term><Term><String>Breast Cancer</String></Term>
  </TermList></Concept></ConceptList></DescriptorRecord>
 <DescriptorRecord><DescriptorUI>D008687</DescriptorUI>
  <DescriptorName><String>Metformin</String></DescriptorName>
  <TreeNumberList><TreeNumber>D02.078.370.141.450</TreeNumber></TreeNumberList>
  <ConceptList><Concept><TermList>
   <Term><String>Metformin</String></Term><Term><String>Glucophage</String></Term>
  </TermList></Concept></ConceptList></DescriptorRecord>
 <DescriptorRecord><DescriptorUI>D068877</DescriptorUI>
  <DescriptorName><String>Trastuzumab</String></DescriptorName>
  <TreeNumberList><TreeNumber>D27.505.954.248</TreeNumber></TreeNumberList>
  <ConceptList><Concept><TermList>
   <Term><String>Trastuzumab</String></Term><Term><String>Herceptin</String></Term>
  </TermList></Concept></ConceptList></DescriptorRecord>
 <DescriptorRecord><DescriptorUI>D005260</DescriptorUI>
  <DescriptorName><String>Female</String></DescriptorName>
  <TreeNumberList><TreeNumber>G01.100</TreeNumber></TreeNumberList>
 </DescriptorRecord>
</DescriptorRecordSet>
"""

UNIPROT_TSV = (
    "Entry\tEntry Name\tProtein names\tGene Names\tOrganism\n"
    "P04626\tERBB2_HUMAN\tReceptor tyrosine-protein kinase erbB-2 (EC 2.7.10.1) "
    "(Proto-oncogene Neu)\tERBB2 HER2 MLN19 NEU\tHomo sapiens\n"
    "P27708\tPYR1_HUMAN\tMultifunctional protein CAD\tCAD\tHomo sapiens\n"
    "Q9Y6K9\tNEMO_HUMAN\tNF-kappa-B essential modulator\tIKBKG NEMO\tHomo sapiens\n"
    "P04637\tP53_HUMAN\tCellular tumor antigen p53 (Tumor suppressor p53)\tTP53 P53\t"
    "Homo sapiens\n"
)

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
