"""``biorag ask``: answer one question with a chosen method and show its evidence."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from biorag.cli import common
from biorag.cli.common import (
    emit_json,
    handle_errors,
    parse_json_option,
    print_accounting,
)
from biorag.errors import BioragError, require_question
from biorag.llm.stream_sink import stream_answers_to
from biorag.methods.base import cited_sentences
from biorag.methods.runtime import Runtime


def run_question(
    rt: Runtime,
    question: str,
    method: str,
    options: dict[str, str] | None,
    method_options: dict[str, Any] | None = None,
    graph_html: Path | None = None,
    graphml: Path | None = None,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Answer one question; returns (answer as a dict, accounting).

    The accounting is :meth:`~biorag.llm.accounting.Accounting.report`: LLM calls, cache hits,
    tokens and latency per stage (none without an LLM) and ``wall_s``, the wall-clock seconds
    of the whole answer (method, retrieval, LLM calls, graph export).
    """
    from biorag.llm.accounting import Accounting
    from biorag.methods.base import Question
    from biorag.methods.registry import build_method

    if options is not None and (
        not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values())
    ):
        raise BioragError(
            '--options must be a JSON object of strings, e.g. {"A": "yes", "B": "no"}'
        )
    llm = rt.llm
    acc = llm.accounting if llm is not None else Accounting()
    with acc.run():
        qa = build_method(method, rt, method_options)
        if qa.needs_index and not rt.index_paths:
            raise BioragError(f"method {method!r} retrieves evidence: pass --index DIR")
        q = Question(text=question, options=options or {})
        answer = asyncio.run(_answer_and_close(rt, qa, q))
        out = answer.model_dump()
        out.update(out.pop("details"))
        if graph_html or graphml:
            export_graph(qa, graph_html, graphml)
    return out, acc.report()


async def _answer_and_close(rt: Runtime, qa: Any, question: Any) -> Any:
    """``qa``'s answer; the LLMs it used (and the variants it built: IP-RAR's reasoning model)
    are closed on the same event loop, which owns their HTTP clients."""
    try:
        return await qa.answer(question)
    finally:
        await rt.aclose_llms()


@contextlib.contextmanager
def _streamed(on: bool) -> Iterator[None]:
    """On a terminal, the reader's text is printed as the model writes it."""
    if not on:
        yield
        return
    started = False

    def show(piece: str) -> None:
        nonlocal started
        if not started:
            typer.echo("Model (streaming): ", nl=False)
            started = True
        typer.echo(piece, nl=False)

    with stream_answers_to(show):
        yield
    if started:
        typer.echo("")


def export_graph(qa: Any, graph_html: Path | None, graphml: Path | None) -> None:
    """Write the local claim graph of the last CLAIMS answer as a page and/or GraphML."""
    run = getattr(qa, "last_run", None)
    if run is None or run.graph is None:
        raise BioragError("--graph-html and --graphml need --method claims")
    from biorag.graph.export import to_graphml, to_html

    if graphml:
        to_graphml(run.graph, graphml)
    if graph_html:
        sources = {c.id: {"chunk_id": c.chunk_id, "doc_id": c.doc_id} for c in run.claims}
        by_doc = {p.doc_id: p for p in run.passages}
        for src in sources.values():
            p = by_doc.get(src["doc_id"])
            src["source_id"] = p.source_id if p else ""
            src["title"] = p.title if p else ""
        to_html(
            run.graph,
            graph_html,
            claims_of_interest=[c.claim_id for c in run.coi],
            layers={s.root_claim_id: run.graph.layers(s.root_claim_id) for s in run.summaries},
            sources=sources,
        )


def print_answer(ans: dict[str, Any], options: dict[str, str] | None) -> None:
    shown = ans["answer"]
    if options and ans["answer"] in options:
        shown = f"{ans['answer']}. {options[ans['answer']]}"
    if ans["parse_failed"]:
        shown = "(no option could be read from the model's answer; counted as unanswered)"
    typer.echo(f"Answer ({ans['method']}): {shown}")
    for sentence in cited_sentences(ans):
        typer.echo(f"  - {sentence}")
    if ans.get("summaries"):
        source_of = {e["doc_id"]: f"{e['corpus']}:{e['source_id']}" for e in ans["evidence"]}
        doc_of = {c["id"]: c["doc_id"] for c in ans["claims"]}
        typer.echo("Summaries (the context, in rank order):")
        for i, summ in enumerate(ans["summaries"], start=1):
            docs = sorted({source_of.get(doc_of.get(c, ""), "?") for c in summ["claim_ids"]})
            text = " ".join(summ["text"].split())
            typer.echo(f"  S{i}. {text}")
            typer.echo(f"      from {len(summ['claim_ids'])} claims in {', '.join(docs)}")
    if ans["evidence"]:
        typer.echo("Evidence:")
        for i, e in enumerate(ans["evidence"], start=1):
            snippet = " ".join(e.get("text", "").split())[:160]
            if "chunk_id" in e:
                where = (
                    f"{e['corpus']}:{e['source_id']} (chunk {e['chunk_id']}, "
                    f"score {e['score']:.3f})"
                )
            else:
                where = f"triplet from {e.get('source_id') or '?'} (score {e['score']:.3f})"
            typer.echo(f"  [{i}] {where} {snippet}...")
    for note in ans["notes"]:
        typer.echo(f"note: {note}", err=True)


@handle_errors
def ask(
    question: str = typer.Argument(..., help="the question"),
    index: list[Path] = typer.Option([], "--index", help="index dir (repeat for several corpora)"),
    method: str = typer.Option("retrieve-read", "--method", help="closed-book|retrieve-read|..."),
    options: str = typer.Option(None, "--options", help='answer options as JSON {"A": "..."}'),
    method_options: str = typer.Option(None, "--method-options", help="method settings as JSON"),
    mode: str = typer.Option(None, "--mode", help="CLAIMS execution mode: faithful|batched"),
    kg: Path = typer.Option(None, "--kg", help="knowledge-graph dir (--method vectorgraphrag)"),
    graph_html: Path = typer.Option(None, "--graph-html", help="CLAIMS: write the graph page"),
    graphml: Path = typer.Option(None, "--graphml", help="CLAIMS: write the graph as GraphML"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Answer a question; every answer comes with the chunks and documents it rests on."""
    question = require_question(
        question, "the QUESTION argument", 'biorag ask "Does metformin lower HbA1c?"'
    )
    opts = parse_json_option(options, "--options")
    mopts = parse_json_option(method_options, "--method-options") or {}
    if not isinstance(mopts, dict):
        raise BioragError(
            "--method-options must be a JSON object of the method's settings, e.g. "
            '{"relevant_target": 5}'
        )
    if mode is not None:
        if method != "claims":
            raise BioragError("--mode applies to --method claims")
        mopts["mode"] = mode
    if kg is not None:
        if method != "vectorgraphrag":
            raise BioragError("--kg applies to --method vectorgraphrag")
        mopts["kg"] = str(kg)
    if method == "retrieve-read" and not index:
        method = "closed-book"
        typer.echo("note: no --index given, answering closed-book", err=True)
    streaming = not as_json and sys.stdout.isatty()
    with common.open_runtime(index) as rt, _streamed(streaming):
        ans, accounting = run_question(rt, question, method, opts, mopts, graph_html, graphml)
    if as_json:
        emit_json({**ans, "accounting": accounting})
        return
    print_answer(ans, opts)
    for label, path in (("graph page", graph_html), ("GraphML", graphml)):
        if path:
            typer.echo(f"{label}: {path}")
    print_accounting(accounting)
