"""The knowledge graph of VectorGraphRAG: triplets, their store, expert review and exports.

* :mod:`biorag.kg.models`: :class:`Triplet`, :class:`AddReport`, :func:`normalize_key`.
* :mod:`biorag.kg.stores`: the :class:`KGStore` protocol (flat triplets) and the
  :class:`TypedGraphStore` protocol (typed nodes, typed multi-edges with provenance, aliases;
  BioStrataKG) in :mod:`~biorag.kg.stores.interfaces`, a module per backend (``sqlite``, the
  embedded default, or ``neo4j``; both layers' SQLite tables live in the same ``kg.sqlite``), and
  :func:`open_store` / :func:`open_typed_store` in :mod:`~biorag.kg.stores.factory`.
* :mod:`biorag.kg.review`: the review CSV (write it, let an expert edit it, import it).
* :mod:`biorag.kg.export`: Neo4j bulk-import CSV, GraphML and JSON lines.
"""

from __future__ import annotations

from biorag.kg.export import export_kg
from biorag.kg.models import AddReport, Triplet, normalize_key
from biorag.kg.review import ImportReport, import_review_csv, write_review_csv
from biorag.kg.stores.factory import open_store, open_typed_store
from biorag.kg.stores.interfaces import KGStore, TypedGraphStore, node_key

__all__ = [
    "AddReport",
    "ImportReport",
    "KGStore",
    "Triplet",
    "TypedGraphStore",
    "export_kg",
    "import_review_csv",
    "node_key",
    "normalize_key",
    "open_store",
    "open_typed_store",
    "write_review_csv",
]
