"""``biorag strata build|stats|query``: the two-level BioStrataKG (entities and papers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from biorag.cli.common import STATE, emit_json, handle_errors, print_accounting
from biorag.errors import BioragError, InputFormatError

app = typer.Typer(
    help="Build, inspect and query a BioStrataKG (typed entities, papers, methods, domains).",
    no_args_is_help=True,
)

QUERIES = ("drugs-for", "gene-disease", "papers-in", "methods-of")


def _runtime() -> Any:
    from biorag.methods.base import Runtime

    return Runtime(STATE.settings())


def _embedder() -> Any:
    """The configured embedder (tests replace this function with a fast fake)."""
    return _runtime().embedder


def _llm() -> Any | None:
    """The configured LLM client, or None (the no-LLM floor)."""
    return _runtime().llm


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
        year = r.get("YEAR")
        out.append(
            {
                "pid": str(pmid),
                "title": str(r.get("QUESTION") or ""),
                "abstract": " ".join(str(c) for c in r.get("CONTEXTS") or []),
                "year": int(year) if str(year or "").isdigit() else None,
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


def _db(strata: Path) -> Path:
    from biorag.strata.build import DB_NAME

    db = strata / DB_NAME
    if not db.is_file():
        raise BioragError(f"--strata: no BioStrataKG at {strata} (run biorag strata build)")
    return db


@app.command()
@handle_errors
def build(
    papers: Path = typer.Option(..., "--papers", help="JSON lines papers or PubMedQA ori_pqal"),
    mesh: Path = typer.Option(None, "--mesh", help="MeSH descriptor XML (desc20XX.xml)"),
    uniprot: Path = typer.Option(None, "--uniprot", help="UniProt TSV (Entry, Protein names...)"),
    out: Path = typer.Option(..., "--out", help="BioStrataKG directory (created)"),
    limit: int = typer.Option(None, "--limit", help="only the first N papers"),
    as_json: bool = typer.Option(False, "--json", help="print the build report as JSON"),
) -> None:
    """Extract typed triplets and methods/datasets/domains, normalize, store."""
    from dataclasses import asdict

    from biorag.strata import build_strata, load_vocabulary

    if limit is not None and limit < 1:
        raise BioragError("--limit must be at least 1")
    _need_file(mesh, "--mesh")
    _need_file(uniprot, "--uniprot")
    rows = load_papers(papers, limit)
    vocab = load_vocabulary(mesh, uniprot)
    _say(f"{len(rows)} papers, vocabulary of {len(vocab)} entries")
    embedder = _embedder()
    llm = _llm()
    if llm is None:
        _say("no LLM configured: no-LLM floor (patterns, vocabulary, keywords)")
    try:
        report = build_strata(rows, llm, embedder, vocab, out)
        accounting = llm.accounting.report() if llm is not None else {}
    finally:
        if llm is not None:
            llm.close()
    if as_json:
        emit_json({**asdict(report), "accounting": accounting})
    else:
        typer.echo(
            f"{out}: {report.papers} papers, {report.triplets} triplets ({report.mode}, "
            f"{report.llm_fallbacks} LLM fallbacks); {sum(report.nodes.values())} nodes, "
            f"{sum(report.edges.values())} edges"
        )
    print_accounting(accounting)


@app.command()
@handle_errors
def stats(
    strata: Path = typer.Option(..., "--strata", help="BioStrataKG directory"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Node counts by type and edge counts by type."""
    from biorag.strata import StrataStore

    with StrataStore(_db(strata)) as store:
        nodes, edges = store.counts()
    data = {
        "strata": str(strata),
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
    name: str = typer.Argument(..., help="disease, gene or domain name"),
    strata: Path = typer.Option(..., "--strata", help="BioStrataKG directory"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """drugs-for DISEASE, gene-disease GENE, papers-in DOMAIN, methods-of DOMAIN."""
    from biorag.strata import StrataStore
    from biorag.strata import queries as q

    kind = kind.strip().lower()
    if kind not in QUERIES:
        raise BioragError(f"query must be one of {', '.join(QUERIES)}, not {kind!r}")
    with StrataStore(_db(strata)) as store:
        if kind == "drugs-for":
            result: Any = q.drugs_for_disease(store, name)
        elif kind == "gene-disease":
            result = q.gene_disease_chains(store, name)
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
        else:
            typer.echo(f"{r['pid']} ({r['year'] or '-'}) {r['title']}")
