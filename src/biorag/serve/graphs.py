"""The knowledge-graph endpoints of ``biorag serve`` (the graphs the server was started with;
requests name entities, never files):

- ``GET /v1/kg/stats``: entity and triplet counts of ``--kg`` (VectorGraphRAG's triplet graph)
  and of ``--strata`` (BioStrataKG: typed nodes and edges).
- ``GET /v1/kg/neighbourhood?entity=&direction=out|both&limit=&graph=kg|strata``: the triplets
  around one entity, as nodes and edges ready to draw; an unknown entity gets the names that
  contain it as suggestions.
- ``GET /v1/kg/export?format=graphml|jsonl|neo4j-csv&graph=``: the whole triplet graph as a
  file (neo4j-csv: a zip of its two files).
- ``GET /v1/strata/{query}?name=``: BioStrataKG's question families (``drugs-for`` a disease,
  ``gene-disease`` chains of a gene, ``drug-drug`` relations of a drug, ``papers-in`` a domain,
  ``methods-of`` a domain).

Every store is opened per request in a worker thread (SQLite connections are not shared
between threads) and closed after it.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path
from typing import Any, Literal

from fastapi import FastAPI, HTTPException, Query
from fastapi.params import Depends
from fastapi.responses import FileResponse
from starlette.background import BackgroundTask

from biorag.kg.export import export_kg
from biorag.kg.stores.factory import open_store, open_typed_store
from biorag.strata import queries

STRATA_QUERIES = ("drugs-for", "gene-disease", "drug-drug", "papers-in", "methods-of")
GraphName = Literal["kg", "strata"]


def add_graph_routes(app: FastAPI, kg: Path | None, strata: Path | None, key: Depends) -> None:
    """Mount the graph endpoints; each says which option the server lacks when its graph is
    not served."""
    graphs = {"kg": kg, "strata": strata}

    def graph_dir(name: str) -> Path:
        path = graphs.get(name)
        if path is None:
            raise HTTPException(404, f"this server serves no {name} graph; start biorag serve "
                                     f"with --{name} DIR")  # fmt: skip
        return path

    @app.get("/v1/kg/stats", dependencies=[key])
    async def stats() -> dict[str, Any]:
        return await asyncio.to_thread(_stats, graphs)

    @app.get("/v1/kg/neighbourhood", dependencies=[key])
    async def neighbourhood(
        entity: str = Query(min_length=1, max_length=200),
        direction: Literal["out", "both"] = "both",
        limit: int = Query(200, ge=1, le=2000),
        graph: GraphName = "kg",
    ) -> dict[str, Any]:
        where = graph_dir(graph)
        return await asyncio.to_thread(_neighbourhood, where, entity.strip(), direction, limit)

    @app.get("/v1/kg/export", dependencies=[key], response_model=None)
    async def export(
        format: Literal["graphml", "jsonl", "neo4j-csv"] = "graphml", graph: GraphName = "kg"
    ) -> FileResponse:
        where = graph_dir(graph)
        path, tmp = await asyncio.to_thread(_export, where, format)
        cleanup = BackgroundTask(tmp.cleanup)
        return FileResponse(path, filename=f"{graph}-{path.name}", background=cleanup)

    @app.get("/v1/strata/{query}", dependencies=[key])
    async def strata_query(query: str, name: str = Query(min_length=1, max_length=200)) -> Any:
        if query not in STRATA_QUERIES:
            raise HTTPException(404, f"unknown query {query!r}; one of {', '.join(STRATA_QUERIES)}")
        where = graph_dir("strata")
        result = await asyncio.to_thread(_strata_query, where, query, name.strip())
        return {"query": query, "name": name.strip(), "result": result}


def _stats(graphs: dict[str, Path | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, path in graphs.items():
        if path is None:
            continue
        store = open_store(path)
        try:
            out[name] = {"entities": store.count_entities(), "triplets": store.count_triplets()}
        finally:
            store.close()
        if name == "strata":
            typed = open_typed_store(path / "kg.sqlite")
            try:
                nodes, edges = typed.counts()
                out[name] |= {"typed_nodes": nodes, "typed_edges": edges}
            finally:
                typed.close()
    return out


def _neighbourhood(path: Path, entity: str, direction: str, limit: int) -> dict[str, Any]:

    store = open_store(path)
    try:
        found = store.has_entity(entity)
        way: Any = direction
        triplets = store.triplets_for_entities([entity], way)[:limit] if found else []
        suggestions: list[str] = []
        if not found:
            wanted = entity.lower()
            suggestions = [n for n in store.entities() if wanted in n.lower()][:10]
    finally:
        store.close()
    names = dict.fromkeys(n for t in triplets for n in (t.subject, t.object))
    return {
        "entity": entity,
        "found": found,
        "suggestions": suggestions,
        "nodes": [{"id": n, "label": n, "center": n.lower() == entity.lower()} for n in names],
        "edges": [
            {
                "source": t.subject,
                "target": t.object,
                "predicate": t.predicate,
                "source_id": t.source_id,
                "model": t.model,
            }
            for t in triplets
        ],
    }


def _export(path: Path, fmt: str) -> tuple[Path, tempfile.TemporaryDirectory[str]]:
    """The export file (neo4j-csv: a zip) in a temporary directory, and that directory (removed
    once the response is sent)."""
    tmp = tempfile.TemporaryDirectory(prefix="biorag-export-")
    out = Path(tmp.name) / "out"
    out.mkdir()  # a directory: each format writes its file(s) by its own name
    try:
        store = open_store(path)
        try:
            files = export_kg(store, fmt, out)  # type: ignore[arg-type]
        finally:
            store.close()
        if fmt != "neo4j-csv":
            return files[0], tmp
        return Path(shutil.make_archive(str(Path(tmp.name) / "kg-neo4j-csv"), "zip", out)), tmp
    except BaseException:
        tmp.cleanup()
        raise


def _strata_query(path: Path, query: str, name: str) -> Any:
    run: Any = {
        "drugs-for": queries.drugs_for_disease,
        "gene-disease": queries.gene_disease_chains,
        "drug-drug": queries.drug_interactions,
        "papers-in": queries.papers_by_domain,
        "methods-of": queries.methods_datasets_of_domain,
    }[query]
    store = open_typed_store(path / "kg.sqlite")
    try:
        return run(store, name)
    finally:
        store.close()
