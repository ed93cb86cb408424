"""``biorag strata build|stats|query|generate``: the two-level BioStrataKG (entities, papers).

The graph lives in the shared knowledge-graph store: ``--backend sqlite`` (default) is the
embedded ``DIR/kg.sqlite`` of ``--out``/``--strata DIR`` (the same file ``biorag kg --kg DIR``
reads); ``--backend neo4j`` is a server (``--neo4j-uri``, ``--neo4j-user``,
``--neo4j-database``, and ``--neo4j-password-env``: the NAME of the variable holding the
password, never the password itself).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from biorag.cli import common
from biorag.cli.common import (
    RAY_ADDRESS_HELP,
    emit_json,
    executor_help,
    handle_errors,
    llm_session,
    open_executor,
    print_accounting,
)
from biorag.cli.neo4j_options import NEO4J_DATABASE, NEO4J_PASSWORD_ENV, NEO4J_URI, NEO4J_USER
from biorag.errors import BioragError, InputFormatError
from biorag.executor.base import settings_for_workers
from biorag.kg.stores.factory import open_typed_store
from biorag.llm.stage_yield import describe_yields

app = typer.Typer(
    help="Build, inspect and query a BioStrataKG (typed entities, papers, methods, domains).",
    no_args_is_help=True,
)

QUERIES = ("drugs-for", "gene-disease", "drug-drug", "papers-in", "methods-of")
BACKENDS = ("sqlite", "neo4j")

BACKEND = typer.Option("sqlite", "--backend", help="sqlite (DIR/kg.sqlite) | neo4j (a server)")


def _say(message: str) -> None:
    typer.echo(message, err=True)


def _need_file(path: Path | None, option: str) -> None:
    if path is not None and not path.is_file():
        raise BioragError(f"{option}: no such file: {path}")


def _pubmedqa(data: dict[str, Any]) -> list[dict[str, Any]]:
    """PubMedQA ori_pqal.json: pid = PMID, abstract = CONTEXTS, keywords = MESHES.

    The title is the QUESTION (PubMedQA's questions are the article titles); LONG_ANSWER (the
    abstract's conclusion, i.e. the answer) is never used.
    """
    out = []
    for pmid, r in data.items():
        if not isinstance(r, dict) or "CONTEXTS" not in r:
            raise InputFormatError(f"PubMedQA record {pmid!r} has no CONTEXTS")
        year = str(r.get("YEAR") or "")
        out.append(
            {
                "pid": str(pmid),
                "title": str(r.get("QUESTION") or ""),
                "abstract": " ".join(str(c) for c in r.get("CONTEXTS") or []),
                "year": int(year) if year.isdigit() else None,
                "keywords": [str(m) for m in r.get("MESHES") or []],
            }
        )
    return out


def load_papers(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    """Papers from a JSON lines file or a PubMedQA ``ori_pqal.json`` (first ``limit``)."""
    _need_file(path, "--papers")
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    papers: list[dict[str, Any]] = []
    whole = None
    if stripped.startswith("{"):
        try:
            whole = json.loads(text)
        except json.JSONDecodeError:
            whole = None  # JSON lines
    if (
        isinstance(whole, dict)
        and "pid" not in whole
        and whole
        and all(isinstance(v, dict) for v in whole.values())
    ):
        papers = _pubmedqa(whole)
    else:
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputFormatError(f"{path}:{n}: not a JSON object ({e.msg})") from None
            if not isinstance(row, dict):
                raise InputFormatError(f"{path}:{n}: not a JSON object")
            papers.append(row)
            if limit is not None and len(papers) >= limit:
                break
    if not papers:
        raise InputFormatError(f"{path}: no papers (JSON lines or PubMedQA ori_pqal.json)")
    return papers[:limit] if limit is not None else papers


def _backend(
    backend: str, uri: str | None, user: str, database: str | None, password_env: str
) -> tuple[Any, str | None, dict[str, Any]]:
    """(backend, uri, store keyword arguments) from the options, checked."""
    b = backend.strip().lower()
    if b not in BACKENDS:
        raise BioragError(f"--backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if b == "sqlite":
        return b, None, {}
    if not uri:
        raise BioragError("--backend neo4j needs --neo4j-uri (e.g. bolt://localhost:7687)")
    return b, uri, {"user": user, "database": database, "password_env": password_env}


def _open_strata(strata: Path | None, backend: str, uri: str | None, kw: dict[str, Any]) -> Any:
    """The BioStrataKG store to read: DIR/kg.sqlite (which must hold one) or the Neo4j server."""
    # lazy: the strata package: ~15 ms at every CLI start
    from biorag.strata.build import DB_NAME

    if backend == "neo4j":
        return open_typed_store(str(uri), "neo4j", **kw)
    if strata is None:
        raise BioragError("--strata DIR is needed (the directory biorag strata build wrote)")
    db = strata / DB_NAME
    if not db.is_file():
        old = " (its strata.sqlite is an older format: build again)"
        hint = old if (strata / "strata.sqlite").is_file() else ""
        raise BioragError(f"--strata: no BioStrataKG at {strata}{hint} (run biorag strata build)")
    store = open_typed_store(db)
    if not sum(store.counts()[0].values()):
        store.close()
        raise BioragError(
            f"--strata: {db} holds no BioStrataKG (run biorag strata build --out {strata})"
        )
    return store


@app.command()
@handle_errors
def build(
    papers: Path = typer.Option(..., "--papers", help="JSON lines papers or PubMedQA ori_pqal"),
    mesh: Path = typer.Option(None, "--mesh", help="MeSH descriptor XML (desc20XX.xml)"),
    uniprot: Path = typer.Option(None, "--uniprot", help="UniProt TSV (Entry, Protein names...)"),
    out: Path = typer.Option(..., "--out", help="BioStrataKG directory (created; kg.sqlite)"),
    limit: int = typer.Option(None, "--limit", help="only the first N papers"),
    backend: str = BACKEND,
    neo4j_uri: str = NEO4J_URI,
    neo4j_user: str = NEO4J_USER,
    neo4j_database: str = NEO4J_DATABASE,
    neo4j_password_env: str = NEO4J_PASSWORD_ENV,
    executor: str = typer.Option(
        None, "--executor", help=executor_help("paper extraction and normalization")
    ),
    ray_address: str = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    as_json: bool = typer.Option(False, "--json", help="print the build report as JSON"),
) -> None:
    """Extract typed triplets and methods/datasets/domains, normalize, store. A build killed
    midway resumes its extraction and normalization when run again."""
    from dataclasses import asdict

    # lazy: the strata package: ~15 ms at every CLI start
    from biorag.strata import build_strata, load_vocabulary
    from biorag.strata.word_shapes import VOCABULARY_SOURCES, entity_source

    if limit is not None and limit < 1:
        raise BioragError("--limit must be at least 1")
    b, uri, kw = _backend(backend, neo4j_uri, neo4j_user, neo4j_database, neo4j_password_env)
    _need_file(mesh, "--mesh")
    _need_file(uniprot, "--uniprot")
    rows = load_papers(papers, limit)
    vocab = load_vocabulary(mesh, uniprot)
    _say(f"{len(rows)} papers, vocabulary of {len(vocab)} entries")
    rt = common.open_runtime()
    llm = rt.llm
    if llm is None:
        _say("no LLM configured: no-LLM floor (patterns, vocabulary, keywords)")
    if not len(vocab):
        _say(
            "no vocabulary given: entities are " + entity_source(0, llm is not None) + ". "
            "A vocabulary types and merges them (Type 2 Diabetes = T2D): " + VOCABULARY_SOURCES
        )
    with rt, llm_session(llm) as accounting, open_executor(executor, ray_address) as runner:
        report = build_strata(
            rows, llm, rt.embedder, vocab, out, backend=b, uri=uri, executor=runner,
            worker_settings=settings_for_workers(common.STATE.settings()), **kw,
        )  # fmt: skip
    if as_json:
        emit_json({**asdict(report), "accounting": accounting})
    else:
        typer.echo(
            f"{report.db_path}: {report.papers} papers, {report.triplets} triplets "
            f"({report.mode}, {report.llm_fallbacks} LLM fallbacks); "
            f"{sum(report.nodes.values())} nodes, {sum(report.edges.values())} edges; "
            f"{report.flat_triplets_added} entity relations added to the flat store"
        )
        _say(f"entities: {report.entities}")
        if report.papers_resumed:
            _say(f"resumed: {report.papers_resumed} papers were extracted by a killed build")
        if report.mentions_resumed:
            _say(f"resumed: {report.mentions_resumed} mentions were normalized by a killed build")
        if report.executor:
            workers = report.executor.get("workers") or {}
            normalizing = report.normalize_executor.get("workers") or {}
            _say(
                f"extracted on {report.executor.get('kind')}: {len(workers)} workers; "
                f"normalized on {len(normalizing)}"
            )
        _say(f"VectorGraphRAG: {report.vectorgraphrag}")
        for line in describe_yields(report.llm_yield):
            _say(f"LLM yield, {line}")
    print_accounting(accounting)


@app.command()
@handle_errors
def stats(
    strata: Path = typer.Option(None, "--strata", help="BioStrataKG directory (sqlite)"),
    backend: str = BACKEND,
    neo4j_uri: str = NEO4J_URI,
    neo4j_user: str = NEO4J_USER,
    neo4j_database: str = NEO4J_DATABASE,
    neo4j_password_env: str = NEO4J_PASSWORD_ENV,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Node counts by type and edge counts by type."""
    b, uri, kw = _backend(backend, neo4j_uri, neo4j_user, neo4j_database, neo4j_password_env)
    with _open_strata(strata, b, uri, kw) as store:
        nodes, edges = store.counts()
    data = {
        "strata": str(strata) if b == "sqlite" else uri,
        "backend": b,
        "nodes": dict(sorted(nodes.items())),
        "edges": dict(sorted(edges.items())),
        "nodes_total": sum(nodes.values()),
        "edges_total": sum(edges.values()),
    }
    if as_json:
        emit_json(data)
        return
    typer.echo(f"nodes: {data['nodes_total']}")
    for k, v in data["nodes"].items():
        typer.echo(f"  {k:<10} {v}")
    typer.echo(f"edges: {data['edges_total']}")
    for k, v in data["edges"].items():
        typer.echo(f"  {k:<14} {v}")


@app.command()
@handle_errors
def query(
    kind: str = typer.Argument(..., help=" | ".join(QUERIES)),
    name: str = typer.Argument(..., help="disease, gene, drug or domain name"),
    strata: Path = typer.Option(None, "--strata", help="BioStrataKG directory (sqlite)"),
    backend: str = BACKEND,
    neo4j_uri: str = NEO4J_URI,
    neo4j_user: str = NEO4J_USER,
    neo4j_database: str = NEO4J_DATABASE,
    neo4j_password_env: str = NEO4J_PASSWORD_ENV,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """drugs-for DISEASE, gene-disease GENE, drug-drug DRUG (synergy, antagonism, interaction),
    papers-in DOMAIN, methods-of DOMAIN."""
    # lazy: the strata package: ~15 ms at every CLI start
    from biorag.strata import queries as q

    kind = kind.strip().lower()
    if kind not in QUERIES:
        raise BioragError(f"query must be one of {', '.join(QUERIES)}, not {kind!r}")
    b, uri, kw = _backend(backend, neo4j_uri, neo4j_user, neo4j_database, neo4j_password_env)
    with _open_strata(strata, b, uri, kw) as store:
        if kind == "drugs-for":
            result: Any = q.drugs_for_disease(store, name)
        elif kind == "gene-disease":
            result = q.gene_disease_chains(store, name)
        elif kind == "drug-drug":
            result = q.drug_interactions(store, name)
        elif kind == "papers-in":
            result = q.papers_by_domain(store, name)
        else:
            result = q.methods_datasets_of_domain(store, name)
    if as_json:
        emit_json({"query": kind, "name": name, "result": result})
        return
    if kind == "methods-of":
        for k in ("methods", "datasets"):
            typer.echo(f"{k}: " + (", ".join(f"{m} ({n})" for m, n in result[k]) or "none"))
        return
    if not result:
        typer.echo(f"no results for {kind} {name!r}")
    for r in result:
        if kind == "drugs-for":
            typer.echo(f"{r['drug']} {r['relation']} (papers: {', '.join(r['papers'])})")
        elif kind == "gene-disease":
            typer.echo(f"{' -> '.join(r['path'])} (papers: {', '.join(r['papers'])})")
        elif kind == "drug-drug":
            a, b = (r["drug"], r["other"]) if r["direction"] == "out" else (r["other"], r["drug"])
            typer.echo(f"{a} {r['relation']} {b} (papers: {', '.join(r['papers'])})")
        else:
            typer.echo(f"{r['pid']} ({r['year'] or '-'}) {r['title']}")


@app.command()
@handle_errors
def generate(
    papers: Path = typer.Option(..., "--papers", help="the papers the graph was built from"),
    strata: Path = typer.Option(None, "--strata", help="BioStrataKG directory (sqlite)"),
    n_questions: int = typer.Option(..., "--n", help="question groups to try (pairs kept <= N)"),
    max_papers: int = typer.Option(5, "--max-papers", help="papers per group, 1..5"),
    seed: int = typer.Option(0, "--seed"),
    out: Path = typer.Option(None, "--out", help="JSON lines file (default DIR/biocdqa.jsonl)"),
    limit: int = typer.Option(None, "--limit", help="only the first N papers"),
    backend: str = BACKEND,
    neo4j_uri: str = NEO4J_URI,
    neo4j_user: str = NEO4J_USER,
    neo4j_database: str = NEO4J_DATABASE,
    neo4j_password_env: str = NEO4J_PASSWORD_ENV,
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """BioCDQA-style QA pairs from groups of connected papers (needs an LLM)."""
    import asyncio
    from dataclasses import asdict

    # lazy: the strata package: ~15 ms at every CLI start
    from biorag.strata.generate import generate_biocdqa

    if n_questions < 1:
        raise BioragError("--n must be at least 1")
    b, uri, kw = _backend(backend, neo4j_uri, neo4j_user, neo4j_database, neo4j_password_env)
    if b == "neo4j" and out is None:
        raise BioragError("--backend neo4j needs --out FILE for the BioCDQA pairs")
    docs = {
        str(p.get("pid")): {k: p.get(k) for k in ("title", "abstract", "full_text")}
        for p in load_papers(papers, limit)
    }
    with (
        common.open_runtime() as rt,
        llm_session(rt.llm) as accounting,
        _open_strata(strata, b, uri, kw) as store,
    ):
        report = asyncio.run(
            generate_biocdqa(
                store,
                docs,
                rt.llm,
                n_questions=n_questions,
                max_papers=max_papers,
                seed=seed,
                out_path=out,
            )
        )
    if as_json:
        emit_json({**asdict(report), "accounting": accounting})
    else:
        typer.echo(
            f"{report.out_path}: {report.kept} of {report.groups} groups kept "
            f"({report.dropped_invalid} invalid, {report.dropped_unquoted} unquoted, "
            f"{report.dropped_ungrounded} ungrounded, {report.failed} failed)"
            + (
                f"; {report.family_fallbacks} structured group(s) had no facts from their "
                "family's query, so the group's whole subgraph was shown"
                if report.family_fallbacks
                else ""
            )
        )
    print_accounting(accounting)
