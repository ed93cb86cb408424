"""Exports of a knowledge graph: Neo4j bulk-import CSV, GraphML, JSON lines.

``export_kg(store, fmt, out)``:

* ``"neo4j-csv"``: ``out`` is a directory; two files in the ``neo4j-admin`` import header format:
  ``entities.csv`` (``key:ID(Entity),name,:LABEL``; the id is the normalized key, kept as the
  node property ``key``) and ``relations.csv``
  (``:START_ID(Entity),:END_ID(Entity),:TYPE,predicate,source_id,model``; type ``RELATION``).
  Load them into a new, empty database (Neo4j 5; from 5.19 on the database name goes first)::

      neo4j-admin database import full --nodes=Entity=entities.csv --relationships=relations.csv

  (i.e. ``neo4j-admin database import full neo4j --nodes=Entity=entities.csv
  --relationships=relations.csv``; add ``--multiline-fields=true`` if a name holds a line
  break). Empty ``source_id``/``model`` fields become absent properties. The resulting graph has
  the schema of :class:`~biorag.kg.stores.flat_neo4j.Neo4jKGStore` less ``seq`` and
  ``predicate_key`` (for browsing and Cypher; to keep adding through biorag, load it with
  ``open_store(uri, "neo4j").add_triplets(...)`` instead).
* ``"graphml"``: a ``networkx.MultiDiGraph`` (nodes: normalized key, attribute ``name``; edges:
  key ``t<i>`` and attributes ``predicate``, ``source_id``, ``model``), ``out`` a file
  (``kg.graphml`` inside it when it is a directory).
* ``"jsonl"``: one triplet per line (``subject, predicate, object, source_id, model``), ``out``
  a file (``triplets.jsonl`` inside it when it is a directory).

Every file is written to a temporary file beside it and renamed into place.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from biorag.errors import BioragError
from biorag.kg.models import Triplet, normalize_key
from biorag.util.files import atomic_writer

ExportFormat = Literal["neo4j-csv", "graphml", "jsonl"]
FORMATS: tuple[str, ...] = ("neo4j-csv", "graphml", "jsonl")
ENTITY_HEADER = ["key:ID(Entity)", "name", ":LABEL"]
RELATION_HEADER = [
    ":START_ID(Entity)",
    ":END_ID(Entity)",
    ":TYPE",
    "predicate",
    "source_id",
    "model",
]
LABEL, REL_TYPE = "Entity", "RELATION"


def iter_source(store_or_triplets: Any) -> Iterator[Triplet]:
    """The triplets of a store (``iter_triplets``) or of an iterable of :class:`Triplet`."""
    if hasattr(store_or_triplets, "iter_triplets"):
        yield from store_or_triplets.iter_triplets()
    else:
        yield from store_or_triplets


def _entity_names(source: Any, triplets: list[Triplet] | None) -> Iterable[str]:
    if hasattr(source, "entities"):
        return source.entities()
    names: dict[str, str] = {}
    for t in triplets or []:
        names.setdefault(normalize_key(t.subject), t.subject.strip())
        names.setdefault(normalize_key(t.object), t.object.strip())
    return names.values()


def _target(out: Path, default_name: str) -> Path:
    return out / default_name if out.is_dir() else out


def export_kg(store: Any, fmt: ExportFormat, out: str | Path) -> list[Path]:
    """Write the graph of ``store`` (or a list of triplets) in ``fmt``; returns the files."""
    out = Path(out)
    if fmt not in FORMATS:
        raise BioragError(f"unknown export format {fmt!r}: use one of {', '.join(FORMATS)}")
    triplets = None if hasattr(store, "iter_triplets") else [t for t in store if t.is_valid()]
    if fmt == "neo4j-csv":
        if out.exists() and not out.is_dir():
            raise BioragError(
                f"{out} is a file: neo4j-csv export writes two files into a directory"
            )
        return _write_neo4j_csv(store, triplets, out)
    if fmt == "graphml":
        return [_write_graphml(store, triplets, _target(out, "kg.graphml"))]
    target = _target(out, "triplets.jsonl")
    with atomic_writer(target, newline="") as fh:
        for t in iter_source(store if triplets is None else triplets):
            fh.write(t.model_dump_json() + "\n")
    return [target]


def _write_neo4j_csv(store: Any, triplets: list[Triplet] | None, out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    nodes, rels = out / "entities.csv", out / "relations.csv"
    with atomic_writer(nodes, newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(ENTITY_HEADER)
        for name in _entity_names(store, triplets):
            w.writerow([normalize_key(name), name, LABEL])
    with atomic_writer(rels, newline="") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(RELATION_HEADER)
        for t in iter_source(store if triplets is None else triplets):
            w.writerow(
                [
                    normalize_key(t.subject),
                    normalize_key(t.object),
                    REL_TYPE,
                    t.predicate,
                    t.source_id,
                    t.model,
                ]
            )
    return [nodes, rels]


def _write_graphml(store: Any, triplets: list[Triplet] | None, target: Path) -> Path:
    import networkx as nx

    g = nx.MultiDiGraph()
    for name in _entity_names(store, triplets):
        g.add_node(normalize_key(name), name=name)
    for i, t in enumerate(iter_source(store if triplets is None else triplets)):
        s, o = normalize_key(t.subject), normalize_key(t.object)
        for key, name in ((s, t.subject), (o, t.object)):
            if key not in g:
                g.add_node(key, name=name.strip())
        g.add_edge(s, o, key=f"t{i}", predicate=t.predicate, source_id=t.source_id, model=t.model)
    with atomic_writer(target, binary=True) as fh:
        nx.write_graphml(g, fh, encoding="utf-8")
    return target
