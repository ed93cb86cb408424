"""``biorag index build|add|remove|stats``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from biorag.cli import common
from biorag.cli.common import STATE, emit_json, handle_errors
from biorag.corpus.audit import Duplicates, SkipSummary
from biorag.errors import BioragError

app = typer.Typer(help="Build and maintain an index directory.", no_args_is_help=True)


def _embedder() -> Any:
    """The configured embedder (an embedder holds nothing to close)."""
    return common.open_runtime().embedder


def _load(files: list[Path], fmt: str):
    from biorag.corpus.loaders import load_corpora

    missing = [str(f) for f in files if not Path(f).exists()]
    if missing:
        raise BioragError(f"corpus file not found: {', '.join(missing)}")
    return load_corpora([Path(f) for f in files], fmt)


def _report(report, as_json: bool) -> None:
    data = report.to_dict()
    if as_json:
        emit_json(data)
        return
    typer.echo(
        f"{data['index']}: {data['documents_total']} documents ({data['documents_new']} new), "
        f"{data['chunks_total']} chunks ({data['chunks_embedded']} embedded now)"
    )
    if data["documents_removed"]:
        typer.echo(f"removed {data['documents_removed']} documents")
    if data.get("papers_without_fulltext"):
        typer.echo(
            f"{data['papers_without_fulltext']} papers have no full text (not in this index; "
            "their abstracts are in a paper_abstracts index)",
            err=True,
        )
    skips = SkipSummary(
        data["skipped"], data["skipped_by_kind"], data["skipped_examples"], data["skipped_file"]
    )
    for line in skips.lines() + Duplicates(**data["duplicates"]).lines():
        typer.echo(line, err=True)


@app.command()
@handle_errors
def build(
    corpus: list[Path] = typer.Option(..., "--corpus", help="corpus files or folders"),
    out: Path = typer.Option(..., "--out", help="index directory to create or resume"),
    fmt: str = typer.Option(
        "auto",
        "--format",
        help="auto|jsonl|medrag|pubmed_xml|pubmedqa|bioasq|textdir|paper_abstracts|"
        "paper_fulltexts (the last two: a paper collection's two IP-RAR levels)",
    ),
    name: str = typer.Option(None, "--name", help="corpus name (default: the folder name)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Build an index (or finish an interrupted build) from corpus files."""
    from biorag.retrieve.index import IndexDir

    s = STATE.settings()
    loaded = _load(corpus, fmt)  # a bad input fails before anything is written
    with IndexDir(out, _embedder(), s.chunking, s.retrieval, name=name, index=s.index) as idx:
        _report(idx.add(loaded, max_record_chars=s.corpus.max_record_chars), as_json)


@app.command()
@handle_errors
def add(
    files: list[Path] = typer.Argument(..., help="corpus files or folders to add"),
    index: Path = typer.Option(..., "--index"),
    fmt: str = typer.Option("auto", "--format"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Add documents; only new chunks are embedded."""
    from biorag.retrieve.index import IndexDir, read_manifest

    read_manifest(index)
    s = STATE.settings()
    loaded = _load(files, fmt)
    with IndexDir(index, _embedder(), retrieval=s.retrieval, index=s.index) as idx:
        _report(idx.add(loaded, max_record_chars=s.corpus.max_record_chars), as_json)


@app.command()
@handle_errors
def remove(
    doc_ids: list[str] = typer.Argument(..., help="document ids or source ids (PMIDs)"),
    index: Path = typer.Option(..., "--index"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Delete documents from the store and both search indexes."""
    from biorag.retrieve.index import IndexDir, read_manifest

    read_manifest(index)
    s = STATE.settings()
    with IndexDir(index, _embedder(), retrieval=s.retrieval, index=s.index) as idx:
        _report(idx.remove(doc_ids), as_json)


@app.command()
@handle_errors
def stats(
    index: Path = typer.Option(..., "--index"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Counts, embedding model and build state of an index."""
    from biorag.retrieve.index import index_stats, read_manifest

    data = index_stats(index)
    backend = data["search_backend"]
    if backend.get("kind") == "milvus":
        from biorag.retrieve.milvus_index import MilvusIndex

        milvus = MilvusIndex.of_index(index, read_manifest(index), STATE.settings().index)
        data["search_backend"] = {**backend, "rows": milvus.count()}
    if as_json:
        emit_json(data)
        return
    for k, v in data.items():
        typer.echo(f"{k}: {v}")
