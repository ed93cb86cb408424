"""The knowledge graph of VectorGraphRAG: triplets, their store, expert review and exports.

* :mod:`biorag.kg.models`: :class:`Triplet`, :class:`AddReport`, :func:`normalize_key`.
* :mod:`biorag.kg.store`: the :class:`KGStore` protocol and :func:`open_store` (``sqlite``, the
  embedded default, or ``neo4j``).
* :mod:`biorag.kg.typed_store`: the :class:`TypedGraphStore` protocol (typed nodes, typed
  multi-edges with provenance, aliases; BioStrataKG) and :func:`open_typed_store`, with the same
  two backends (its SQLite tables live in the same ``kg.sqlite``).
* :mod:`biorag.kg.review`: the review CSV (write it, let an expert edit it, import it).
* :mod:`biorag.kg.export`: Neo4j bulk-import CSV, GraphML and JSON lines.
"""

from __future__ import annotations

from biorag.kg.export import export_kg
from biorag.kg.models import AddReport, Triplet, normalize_key
from biorag.kg.review import ImportReport, import_review_csv, write_review_csv
from biorag.kg.store import KGStore, open_store
from biorag.kg.typed_store import TypedGraphStore, node_key, open_typed_store

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
