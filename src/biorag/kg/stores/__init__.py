"""The knowledge graph's stores: two interfaces, a module per backend, and the factory.

* :mod:`~biorag.kg.stores.interfaces`: :class:`KGStore` (flat triplets, VectorGraphRAG) and
  :class:`TypedGraphStore` (typed nodes and multi-edges, BioStrataKG), with the record types and
  helpers the backends share.
* :mod:`~biorag.kg.stores.flat_sqlite`, :mod:`~biorag.kg.stores.typed_sqlite`: the embedded
  default, both layers in one ``DIR/kg.sqlite`` (:mod:`~biorag.kg.stores.sqlite_common`).
* :mod:`~biorag.kg.stores.flat_neo4j`, :mod:`~biorag.kg.stores.typed_neo4j`: a Neo4j server
  (:mod:`~biorag.kg.stores.neo4j_common`; the driver is imported only when one is opened).
* :mod:`~biorag.kg.stores.factory`: :func:`open_store` and :func:`open_typed_store`.

Backends import the interfaces, the factory imports the backends; nothing imports the factory
back. This package imports none of them itself.
"""
