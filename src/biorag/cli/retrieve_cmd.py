"""``biorag retrieve``: queries in, a TREC run file out."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from biorag.cli import common
from biorag.cli.common import STATE, emit_json, handle_errors
from biorag.errors import BioragError, InputFormatError
from biorag.retrieve.trec import fuse_for_run, write_run
from biorag.util.progress import progress


def read_queries(path: Path) -> tuple[list[tuple[str, str]], list[str]]:
    """``{"id": ..., "text": ...}`` per line; malformed lines are skipped and reported."""
    if not path.is_file():
        raise BioragError(f"queries file {path} not found")
    queries: list[tuple[str, str]] = []
    skipped: list[str] = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                qid, text = str(rec["id"]), str(rec["text"]).strip()
                if not text:
                    raise ValueError("empty text")
                queries.append((qid, text))
            except (ValueError, KeyError, TypeError) as e:
                skipped.append(f"{path}:{n}: {e.__class__.__name__}: {e}")
    if not queries:
        raise InputFormatError(
            f'{path} holds no usable query; expected JSON lines like {{"id": "q1", "text": "..."}}'
        )
    return queries, skipped


@handle_errors
def retrieve(
    index: list[Path] = typer.Option(..., "--index", help="index dir (repeat for several corpora)"),
    queries: Path = typer.Option(..., "--queries", help='JSONL of {"id", "text"}'),
    k: int = typer.Option(10, "--k", min=1),
    level: str = typer.Option("chunk", "--level", help="chunk|doc"),
    retriever: str = typer.Option(None, "--retriever", help="bm25|dense|hybrid (default: config)"),
    out: Path = typer.Option(..., "--out", help="TREC run file to write"),
    tag: str = typer.Option(None, "--tag"),
    batch: int = typer.Option(64, "--batch", min=1),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Retrieve for every query and write a TREC run (docid = source id at doc level)."""
    qs, skipped = read_queries(queries)
    s = STATE.settings()
    retriever = retriever or s.retrieval.retriever
    run: dict[str, list[tuple[str, float]]] = {}
    with common.open_runtime(index) as rt:
        searchers = rt.searcher.select(None)
        for i in progress(range(0, len(qs), batch), "retrieving", unit="batch"):
            part = qs[i : i + batch]
            # each index on its own, then one comparable ranking per query (fuse_for_run)
            per_index = [sr.search([t for _, t in part], k, retriever, level) for sr in searchers]
            for qi, (qid, _) in enumerate(part):
                rankings = [
                    [(p.source_id if level == "doc" else p.chunk_id, p.score) for p in res[qi]]
                    for res in per_index
                ]
                run[qid] = fuse_for_run(rankings, s.retrieval.rrf_k, limit=k * len(searchers))
    write_run(out, run, tag or f"biorag-{retriever}-{level}")
    summary = {
        "queries": len(qs),
        "skipped": len(skipped),
        "skipped_examples": skipped[:20],
        "run": str(out),
        "retriever": retriever,
        "level": level,
        "k": k,
        # the settings each index was searched with that differ from those it was built with
        "settings_differ": {sr.name: sr.settings_differ for sr in searchers if sr.settings_differ},
    }
    if as_json:
        emit_json(summary)
        return
    typer.echo(f"wrote {out}: {len(qs)} queries, top {k} {level}s by {retriever}")
    for line in skipped[:20]:
        typer.echo(f"skipped {line}", err=True)
    if len(skipped) > 20:
        typer.echo(
            f"... and {len(skipped) - 20} more skipped queries (--json lists the count)", err=True
        )
