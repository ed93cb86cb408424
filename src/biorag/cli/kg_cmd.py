"""``biorag kg build|stats|query|import|export|push``: the knowledge graph of VectorGraphRAG."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from biorag.cli import common
from biorag.cli.common import (
    RAY_ADDRESS_HELP,
    emit_json,
    executor_help,
    handle_errors,
    llm_session,
    open_executor,
    parse_json_option,
    print_accounting,
)
from biorag.cli.neo4j_options import NEO4J_DATABASE, NEO4J_PASSWORD_ENV, NEO4J_URI, NEO4J_USER
from biorag.errors import BioragError
from biorag.executor.base import settings_for_workers
from biorag.kg.build import FORMATS as BUILD_FORMATS
from biorag.kg.build import HALVES, build_kg, import_csv, kg_stats, require_kg
from biorag.kg.entity_index import EntityIndex
from biorag.kg.export import FORMATS as EXPORT_FORMATS
from biorag.kg.export import export_kg
from biorag.kg.push import push_kg
from biorag.kg.stores.factory import open_store
from biorag.llm.stage_yield import describe_yields

if TYPE_CHECKING:
    from biorag.kg.retrieval import KGResult

app = typer.Typer(
    help="Build, inspect, query, review and export a VectorGraphRAG knowledge graph.",
    no_args_is_help=True,
)

SHOW_DROPPED = 10


def _say(message: str) -> None:
    typer.echo(message, err=True)


def _choice(value: str, allowed: tuple[str, ...], option: str) -> str:
    v = value.strip().lower()
    if v not in allowed:
        raise BioragError(f"{option} must be one of {', '.join(allowed)}, not {value!r}")
    return v


@app.command()
@handle_errors
def build(
    source: Path = typer.Option(..., "--from", help="dataset file, JSON lines file or text"),
    fmt: str = typer.Option(..., "--format", help="medmcqa | mirage | jsonl | text"),
    out: Path = typer.Option(..., "--out", help="knowledge-graph directory (created or added to)"),
    batch_size: int = typer.Option(
        1, "--batch-size", help="QA pairs per LLM extraction call (1 = one call per pair)"
    ),
    use_explanation: bool = typer.Option(
        True,
        "--use-explanation/--no-use-explanation",
        help="give the dataset's explanation (MedMCQA exp) to the extractor",
    ),
    half: str = typer.Option(
        "all", "--half", help="first | second | all: which half of the records (file order)"
    ),
    split: str = typer.Option(None, "--split", help="medmcqa: a subject; mirage: a subset"),
    explanations: Path = typer.Option(
        None, "--explanations", help="mirage: MedMCQA dev.json, whose exp go with medmcqa qids"
    ),
    limit: int = typer.Option(None, "--limit", help="only the first N records (after --half)"),
    executor: str = typer.Option(None, "--executor", help=executor_help("triplet extraction")),
    ray_address: str = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    as_json: bool = typer.Option(False, "--json", help="print the build report as JSON"),
) -> None:
    """Extract triplets, store them, embed the entities and write the expert-review CSV.
    A build killed midway resumes its extraction when run again."""
    fmt = _choice(fmt, BUILD_FORMATS, "--format")
    half = _choice(half, HALVES, "--half")
    if batch_size < 1:
        raise BioragError("--batch-size must be at least 1")
    with (
        common.open_runtime() as rt,
        llm_session(rt.llm) as accounting,
        open_executor(executor, ray_address) as runner,
    ):
        report = build_kg(
            source,
            fmt,
            out,
            embedder=rt.embedder,
            llm=rt.llm,
            batch_size=batch_size,
            use_explanation=use_explanation,
            half=half,
            split=split,
            limit=limit,
            explanations=explanations,
            progress=_say,
            executor=runner,
            worker_settings=settings_for_workers(common.STATE.settings()),
        )
    if report.units_resumed:
        _say(f"resumed: {report.units_resumed} units were extracted by an earlier, killed build")
    if report.executor:
        workers = report.executor.get("workers") or {}
        _say(f"extracted on {report.executor.get('kind')}: {len(workers)} workers")
    if report.dropped:
        _say(f"dropped {len(report.dropped)}: " + _reasons(report.dropped_by_reason()))
        for d in report.dropped[:SHOW_DROPPED]:
            _say(f"  {d.where}: {d.reason}")
        if len(report.dropped) > SHOW_DROPPED:
            _say(f"  ... all {len(report.dropped)} are listed in {report.files['build']}")
    if as_json:
        emit_json({**report.to_dict(), "accounting": accounting})
    else:
        typer.echo(
            f"{report.kg}: {report.added} triplets added ({report.duplicates} duplicates, "
            f"{len(report.dropped)} dropped) from {report.units_kept} of {report.units} "
            f"records ({report.extractor}); now {report.triplets_total} triplets, "
            f"{report.entities_total} entities ({report.entities_embedded} embedded now)"
        )
        typer.echo(f"review CSV: {report.files['review_csv']}")
        for line in describe_yields(report.llm_yield):
            _say(f"LLM yield, {line}")
    print_accounting(accounting)


def _reasons(counts: dict[str, int], top: int = 5) -> str:
    shown = [f"{n} {why}" for why, n in list(counts.items())[:top]]
    return ", ".join(shown) + (", ..." if len(counts) > top else "")


@app.command()
@handle_errors
def stats(
    kg: Path = typer.Option(..., "--kg", help="knowledge-graph directory"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Counts, top predicates and subjects, the entity index and the last build."""
    data = kg_stats(kg)
    if as_json:
        emit_json(data)
        return
    for key in ("kg", "triplets", "entities", "predicates", "sources", "store_bytes"):
        typer.echo(f"{key}: {data[key]}")
    models = [f"{m or '-'} ({n})" for m, n in data["models"].items()]
    typer.echo(f"models: {', '.join(models)}")
    idx = data["entity_index"]
    if idx is None:
        typer.echo("entity index: none (run biorag kg build or import to embed the entities)")
    else:
        typer.echo(
            f"entity index: {idx['indexed']} names, {idx['model_id']} (dim {idx['dim']}), "
            f"{idx['not_indexed']} not indexed, {idx['stale']} stale"
        )
    typer.echo(
        "top predicates: "
        + ", ".join(f"{p['predicate']} ({p['triplets']})" for p in data["top_predicates"])
    )
    typer.echo(
        "top subjects: "
        + ", ".join(f"{s['entity']} ({s['out_degree']})" for s in data["top_subjects"])
    )
    if data.get("last_build"):
        b = data["last_build"]
        typer.echo(
            f"last build: {b['built_at']} from {b['source']} ({b['format']}, half {b['half']}, "
            f"{b['extractor']}): {b['added']} added, {b['dropped_count']} dropped"
        )
    if data.get("review_csv"):
        typer.echo(f"review CSV: {data['review_csv']}")


@app.command()
@handle_errors
def query(
    question: str = typer.Argument(..., help="the question"),
    kg: Path = typer.Option(..., "--kg", help="knowledge-graph directory"),
    options: str = typer.Option(None, "--options", help='answer options as JSON {"A": "..."}'),
    k: int = typer.Option(10, "--k", help="similar entities per search term"),
    top_n: int = typer.Option(300, "--top-n", help="triplets kept after ranking"),
    min_entity_sim: float = typer.Option(0.9, "--min-entity-sim"),
    min_triplet_sim: float = typer.Option(0.1, "--min-triplet-sim"),
    direction: str = typer.Option("out", "--direction", help="out | both: edges followed"),
    use_options: bool = typer.Option(True, "--use-options/--no-use-options"),
    paper_compat: bool = typer.Option(False, "--paper-compat", help="the public code's defects"),
    show: int = typer.Option(20, "--show", help="triplets printed (text output)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Search terms, the entities they match (with similarity) and the ranked triplets."""
    d = require_kg(kg)
    opts = _query_options(options)
    direction = _choice(direction, ("out", "both"), "--direction")
    params: dict[str, Any] = {
        "k": k,
        "top_n": top_n,
        "min_entity_sim": min_entity_sim,
        "min_triplet_sim": min_triplet_sim,
        "direction": direction,
        "use_options": use_options,
        "paper_compat": paper_compat,
    }
    res, seconds = _run_query(d, question, opts, params)
    data = _query_data(question, opts, params, res, seconds)
    if as_json:
        emit_json(data)
        return
    _print_query(data, res, show, seconds)


def _query_options(options: str | None) -> dict[str, Any]:
    """The ``--options`` JSON object (letter -> option text), checked."""
    opts = parse_json_option(options, "--options") or {}
    if not isinstance(opts, dict) or not all(isinstance(v, str) for v in opts.values()):
        raise BioragError('--options must be a JSON object of strings, e.g. {"A": "yes"}')
    return opts


def _run_query(
    d: Path, question: str, opts: dict[str, Any], params: dict[str, Any]
) -> tuple[KGResult, float]:
    """Sync the entity index, then retrieve ``question``'s triplets: (result, seconds)."""
    from biorag.kg.retrieval import KGRetriever  # lazy: loads scikit-learn and pandas

    store = open_store(d)
    try:
        embedder = common.open_runtime().embedder  # an embedder holds nothing to close
        index = EntityIndex.open(d, embedder)
        embedded = index.sync(store.entities())
        if embedded:
            _say(f"embedded {embedded} entities missing from the entity index")
        retriever = KGRetriever(
            store,
            index,
            embedder,
            k=params["k"],
            min_entity_sim=params["min_entity_sim"],
            min_triplet_sim=params["min_triplet_sim"],
            top_n=params["top_n"],
            use_options=params["use_options"],
            paper_compat=params["paper_compat"],
            direction=params["direction"],
        )
        start = time.perf_counter()
        res = retriever.retrieve(question, list(opts.values()))
        seconds = time.perf_counter() - start
    finally:
        store.close()
    return res, seconds


def _query_data(
    question: str, opts: dict[str, Any], params: dict[str, Any], res: KGResult, seconds: float
) -> dict[str, Any]:
    """The query's JSON report: the question, parameters, terms, matches and ranked triplets."""
    return {
        "question": question,
        "options": opts,
        "params": params,
        "search_terms": res.terms,
        "matched_entities": [
            {"term": t, "entity": e, "similarity": round(s, 4)} for t, e, s in res.matched_entities
        ],
        "triplets": [
            {
                "rank": i,
                "subject": t.subject,
                "predicate": t.predicate,
                "object": t.object,
                "score": round(s, 4),
                "source_id": t.source_id,
                "model": t.model,
            }
            for i, (t, s) in enumerate(res.triplets, 1)
        ],
        "seconds": round(seconds, 4),
    }


def _print_query(data: dict[str, Any], res: KGResult, show: int, seconds: float) -> None:
    """The query's text output: terms, matched entities, the top ``show`` triplets, the time."""
    typer.echo(f"search terms ({len(res.terms)}): {', '.join(res.terms)}")
    typer.echo(f"matched entities ({len(res.matched_entities)}):")
    for m in data["matched_entities"]:
        typer.echo(f"  {m['term']!r} -> {m['entity']} ({m['similarity']:.3f})")
    shown = data["triplets"][: max(0, show)]
    typer.echo(f"triplets ({len(res.triplets)} ranked, top {len(shown)} shown):")
    for t in shown:
        src = f"  [{t['source_id']}]" if t["source_id"] else ""
        typer.echo(
            f"  {t['rank']:>3}. {t['score']:.3f}  {t['subject']} | {t['predicate']} | "
            f"{t['object']}{src}"
        )
    _say(f"retrieval took {seconds:.3f} s")


@app.command(name="import")
@handle_errors
def import_(
    csv_file: Path = typer.Argument(..., help="the reviewed CSV (header subject,predicate,...)"),
    kg: Path = typer.Option(..., "--kg", help="knowledge-graph directory"),
    replace: bool = typer.Option(
        True,
        "--replace/--add",
        help="replace: the graph becomes the CSV's valid rows; add: add them to the graph",
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Load an expert-edited CSV; report each rejected row by line; re-sync the entity index."""
    res = import_csv(kg, csv_file, embedder=common.open_runtime().embedder, replace=replace)
    r = res.report
    for line, why in r.rejected:
        _say(f"{csv_file}:{line}: rejected: {why}")
    if as_json:
        emit_json(res.to_dict())
        return
    typer.echo(
        f"{kg}: {r.added} added, {r.duplicates} duplicates, {len(r.rejected)} rejected "
        f"({res.mode}); {res.triplets_before} -> {res.triplets_total} triplets, "
        f"{res.entities_total} entities ({res.entities_embedded} embedded, "
        f"{res.entities_removed} removed from the index)"
    )


@app.command()
@handle_errors
def export(
    kg: Path = typer.Option(..., "--kg", help="knowledge-graph directory"),
    fmt: str = typer.Option(..., "--format", help="neo4j-csv | graphml | jsonl"),
    out: Path = typer.Option(..., "--out", help="a directory (neo4j-csv) or a file"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Write the graph as Neo4j bulk-import CSV, GraphML or JSON lines."""
    d = require_kg(kg)
    fmt = _choice(fmt, EXPORT_FORMATS, "--format")
    store = open_store(d)
    try:
        files = export_kg(store, fmt, out)  # type: ignore[arg-type]
        counts = {"triplets": store.count_triplets(), "entities": store.count_entities()}
    finally:
        store.close()
    if as_json:
        emit_json({"format": fmt, "files": [str(f) for f in files], **counts})
        return
    typer.echo(
        f"{counts['triplets']} triplets, {counts['entities']} entities -> "
        + ", ".join(str(f) for f in files)
    )


@app.command()
@handle_errors
def push(
    kg: Path = typer.Option(..., "--kg", help="knowledge-graph directory"),
    neo4j_uri: str = NEO4J_URI,
    neo4j_user: str = NEO4J_USER,
    neo4j_database: str = NEO4J_DATABASE,
    neo4j_password_env: str = NEO4J_PASSWORD_ENV,
    batch_size: int = typer.Option(1000, "--batch-size", help="triplets per UNWIND query"),
    restart: bool = typer.Option(False, "--restart", help="ignore the checkpoint: send all"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Load the graph into a Neo4j server in batches; an interrupted push resumes."""
    if not neo4j_uri:
        raise BioragError("kg push needs --neo4j-uri (e.g. bolt://localhost:7687)")
    r = push_kg(
        kg,
        neo4j_uri,
        user=neo4j_user,
        password_env=neo4j_password_env,
        database=neo4j_database,
        batch_size=batch_size,
        restart=restart,
    )
    if as_json:
        emit_json(r.to_dict())
        return
    resumed = f" (resumed after {r.resumed_from})" if r.resumed_from else ""
    typer.echo(
        f"{r.pushed} of {r.local_triplets} triplets pushed{resumed} to {r.uri} in "
        f"{r.seconds:.1f} s ({r.triplets_per_s:.0f}/s): {r.added} added, {r.duplicates} already "
        f"there, {r.invalid} invalid; the server now holds {r.server_triplets} triplets, "
        f"{r.server_entities} entities"
    )


if __name__ == "__main__":  # python -m biorag.cli.kg_cmd (the same as biorag kg)
    app()
