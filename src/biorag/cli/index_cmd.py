"""``biorag index build|add|remove|stats``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import typer

from biorag.cli import common
from biorag.cli.common import (
    RAY_ADDRESS_HELP,
    STATE,
    emit_json,
    executor_help,
    handle_errors,
    open_executor,
)
from biorag.corpus.audit import Duplicates, SkipSummary
from biorag.corpus.loaders import load_corpora
from biorag.errors import BioragError
from biorag.retrieve.index import IndexDir, index_stats, read_manifest
from biorag.retrieve.milvus_index import MilvusIndex

app = typer.Typer(help="Build and maintain an index directory.", no_args_is_help=True)


def _embedder() -> Any:
    """The configured embedder (an embedder holds nothing to close)."""
    return common.open_runtime().embedder


EXECUTOR_HELP = executor_help("embedding chunks")


@contextmanager
def _open_index(
    path: Path, executor: str | None, ray_address: str | None, **kw: Any
) -> Iterator[Any]:
    """The index directory, with the batch executor the settings and options name (closed
    with it)."""
    s = STATE.settings()
    with (
        open_executor(executor, ray_address) as runner,
        IndexDir(
            path, _embedder(), retrieval=s.retrieval, index=s.index, executor=runner,
            embed_settings=s.embed, **kw,
        ) as idx,
    ):  # fmt: skip
        yield idx


def _load(files: list[Path], fmt: str):
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
    for worker, st in (data.get("executor") or {}).get("workers", {}).items():
        rate = st["rows"] / st["s"] if st["s"] else 0.0
        typer.echo(f"embedded on {worker}: {st['rows']} chunks, {rate:.0f} chunks/s busy", err=True)
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
    executor: str = typer.Option(None, "--executor", help=EXECUTOR_HELP),
    ray_address: str = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Build an index (or finish an interrupted build) from corpus files."""
    s = STATE.settings()
    loaded = _load(corpus, fmt)  # a bad input fails before anything is written
    with _open_index(out, executor, ray_address, chunking=s.chunking, name=name) as idx:
        _report(idx.add(loaded, max_record_chars=s.corpus.max_record_chars), as_json)


@app.command()
@handle_errors
def add(
    files: list[Path] = typer.Argument(..., help="corpus files or folders to add"),
    index: Path = typer.Option(..., "--index"),
    fmt: str = typer.Option("auto", "--format"),
    executor: str = typer.Option(None, "--executor", help=EXECUTOR_HELP),
    ray_address: str = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Add documents; only new chunks are embedded."""
    read_manifest(index)
    s = STATE.settings()
    loaded = _load(files, fmt)
    with _open_index(index, executor, ray_address) as idx:
        _report(idx.add(loaded, max_record_chars=s.corpus.max_record_chars), as_json)


@app.command()
@handle_errors
def remove(
    doc_ids: list[str] = typer.Argument(..., help="document ids or source ids (PMIDs)"),
    index: Path = typer.Option(..., "--index"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Delete documents from the store and both search indexes."""
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
    data = index_stats(index)
    backend = data["search_backend"]
    if backend.get("kind") == "milvus":
        milvus = MilvusIndex.of_index(index, read_manifest(index), STATE.settings().index)
        data["search_backend"] = {**backend, "rows": milvus.count()}
    if as_json:
        emit_json(data)
        return
    for k, v in data.items():
        typer.echo(f"{k}: {v}")
