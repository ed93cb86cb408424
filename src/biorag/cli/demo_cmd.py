"""``biorag demo``: index the bundled PubMedQA sample once, then answer a bundled question."""

from __future__ import annotations

import json
import shutil
from importlib import resources
from pathlib import Path

import typer

from biorag.cli import common
from biorag.cli.ask_cmd import print_answer, run_question
from biorag.cli.common import STATE, emit_json, handle_errors, print_accounting
from biorag.config import ChunkingSettings
from biorag.corpus.loaders import load_corpus
from biorag.embed.windows import window_of
from biorag.retrieve.index import IndexDir, index_stats
from biorag.runtime import Runtime

DATA = "biorag.demo.data"


def demo_questions() -> list[dict]:
    text = resources.files(DATA).joinpath("questions.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def demo_chunking(chunking: ChunkingSettings, rt: Runtime) -> tuple[ChunkingSettings, str]:
    """The demo index's chunking: unless the user set ``[chunking]``, chunks no longer than the
    local embedding model reads (measured to cost nothing against the 1,000-token default on
    PubMedQA: docs/benchmarks.md, "Chunks longer than the embedding model reads"), so the
    first run has nothing to warn about; and what it chose, for the build's message."""
    if chunking != ChunkingSettings():
        return chunking, ""
    found = window_of(rt.embedder)
    if found is None or found[1] >= chunking.chunk_tokens:
        return chunking, ""
    window = found[1]
    fit = {
        "chunk_tokens": window,
        "overlap_tokens": min(50, window // 5),
        "max_chunk_tokens": window,
    }
    fitted = chunking.model_copy(update=fit)
    return fitted, f"; chunks of at most {window} word pieces, what the embedding model reads"


def ensure_demo_index(home: Path, rt: Runtime) -> Path:
    """Build the demo index under ``home`` with ``rt``'s embedder and settings, unless a
    complete one is already there (also the benchmarks' demo index)."""
    path = home / "demo-index"
    if (path / "manifest.json").is_file():
        stats = index_stats(path)
        if stats["embed_model"] == rt.embedder.model_id and stats["complete"]:
            return path
        if stats["embed_model"] != rt.embedder.model_id:  # the demo index is biorag's own cache
            built = stats["embed_model"]
            typer.echo(f"the demo index was built with {built}: rebuilding it", err=True)
            shutil.rmtree(path)
    s = rt.settings
    chunking, how = demo_chunking(s.chunking, rt)
    typer.echo(f"building the demo index in {path} (once{how})...", err=True)
    with resources.as_file(resources.files(DATA).joinpath("pubmedqa_sample.jsonl")) as sample:
        loaded = load_corpus(sample, "jsonl", source="pubmedqa-sample")
    with IndexDir(path, rt.embedder, chunking, s.retrieval, name="pubmedqa-sample") as idx:
        idx.add(loaded)
    return path


@handle_errors
def demo(
    question: int = typer.Option(0, "--question", "-q", help="which bundled question (0-39)"),
    method: str = typer.Option("claims", "--method", help="claims|retrieve-read|closed-book"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Index 200 bundled PubMedQA abstracts (MIT licence) and answer one of their questions
    with CLAIMS, writing the page of its claim graph."""
    s = STATE.settings()
    questions = demo_questions()
    if not 0 <= question < len(questions):
        typer.echo(f"error: --question must be between 0 and {len(questions) - 1}", err=True)
        raise typer.Exit(2)
    q = questions[question]
    with common.open_runtime() as rt:
        index = ensure_demo_index(s.home_path, rt)
        rt.index_paths = [index]
        graph_page = s.home_path / "demo-graph.html" if method == "claims" else None
        ans = run_question(rt, q["question"], method, q["options"], graph_html=graph_page)
    accounting = ans["accounting"]
    mode = (
        f"LLM {s.llm.backend}:{s.llm.model or s.llm.hf_path}"
        if s.llm.backend != "none"
        else (
            "no-LLM operators (a floor); set BIORAG_LLM_BASE_URL and BIORAG_LLM_MODEL "
            "to use a real model"
        )
    )
    if as_json:
        emit_json({**ans, "question": q, "mode": mode, "index": str(index)})
        return
    typer.echo(f"Question {q['id']}: {q['question']}")
    typer.echo("Options: " + ", ".join(f"{k}. {v}" for k, v in q["options"].items()))
    typer.echo(f"Mode: {mode}")
    print_answer(ans, q["options"])
    gold = q["gold"]
    typer.echo(f"Expert label: {gold}. {q['options'][gold]}")
    if graph_page:
        typer.echo(f"Claim graph page: {graph_page}")
    print_accounting(accounting)
