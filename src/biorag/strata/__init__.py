"""BioStrataKG: a two-level (entity / document) biomedical knowledge graph.

* :mod:`biorag.strata.vocab`: user-supplied controlled vocabularies (MeSH XML, UniProt TSV).
* :mod:`biorag.strata.normalize`: entity normalization against the vocabulary.
* :mod:`biorag.strata.extract`: typed entity triplets and document-level methods/datasets/domains.
* :mod:`biorag.strata.store`: the typed-node / typed-multi-edge SQLite store.
* :mod:`biorag.strata.build`: :func:`build_strata`.
* :mod:`biorag.strata.queries`: drugs for a disease, gene-disease chains, papers by domain, ...
"""

from __future__ import annotations

from biorag.strata.build import BuildReport, build_strata
from biorag.strata.store import StrataStore
from biorag.strata.vocab import VocabEntry, Vocabulary, load_vocabulary

__all__ = [
    "BuildReport",
    "StrataStore",
    "VocabEntry",
    "Vocabulary",
    "build_strata",
    "load_vocabulary",
]
