"""BioStrataKG: a two-level (entity / document) biomedical knowledge graph.

* :mod:`biorag.strata.vocab`: user-supplied controlled vocabularies (MeSH XML, UniProt TSV).
* :mod:`biorag.strata.normalize`: entity normalization against the vocabulary.
* :mod:`biorag.strata.extract`: typed entity triplets and document-level methods/datasets/domains.
* :mod:`biorag.strata.extract_papers`, :mod:`biorag.strata.normalize_mentions`: extraction per
  paper, then normalization per distinct mention, as resumable batch stages (here or on Ray).
* :mod:`biorag.strata.build`: :func:`build_strata`, into the shared knowledge-graph store
  (:func:`biorag.kg.open_typed_store`: SQLite ``DIR/kg.sqlite`` or Neo4j), with the entity level
  also projected into the flat VectorGraphRAG store.
* :mod:`biorag.strata.queries`: drugs for a disease, gene-disease chains, papers by domain, ...
* :mod:`biorag.strata.generate`: BioCDQA-style question generation.
"""

from __future__ import annotations

from biorag.kg.stores.factory import open_typed_store
from biorag.kg.stores.interfaces import TypedGraphStore
from biorag.strata.build import BuildReport, build_strata
from biorag.strata.vocab import VocabEntry, Vocabulary, load_vocabulary

__all__ = [
    "BuildReport",
    "TypedGraphStore",
    "VocabEntry",
    "Vocabulary",
    "build_strata",
    "load_vocabulary",
    "open_typed_store",
]
