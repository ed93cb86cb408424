"""``biorag ask``: answer one question with a chosen method and show its evidence."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import typer

from biorag.asking import EventSink
from biorag.asking import ask as ask_question
from biorag.cli import common
from biorag.cli.common import (
    emit_json,
    handle_errors,
    parse_json_option,
    print_accounting,
)
from biorag.corpus.datasets.base import Question
from biorag.errors import BioragError, require_question
from biorag.graph.export import to_graphml, to_html
from biorag.methods.base import Answer, cited_sentences, evidence_numbers
from biorag.runtime import Runtime


def run_question(
    rt: Runtime,
    question: str,
    method: str,
    options: dict[str, str] | None,
    method_options: dict[str, Any] | None = None,
    graph_html: Path | None = None,
    graphml: Path | None = None,
    on_event: EventSink | None = None,
) -> dict[str, Any]:
    """Answer one question through :func:`biorag.asking.ask`; the answer as JSON (what
    ``/v1/ask`` returns), its ``accounting`` the LLM calls, cache hits, tokens and latency per
    stage and ``wall_s``. The LLMs it used are closed on the loop that used them."""
    if options is not None and (
        not isinstance(options, dict) or not all(isinstance(v, str) for v in options.values())
    ):
        raise BioragError(
            '--options must be a JSON object of strings, e.g. {"A": "yes", "B": "no"}'
        )
    if (graph_html or graphml) and method != "claims":
        raise BioragError("--graph-html and --graphml need --method claims")
    q = Question(text=question, options=options or {})
    answer = asyncio.run(_ask_and_close(rt, q, method, method_options, on_event))
    if graph_html or graphml:
        export_graph(answer.trace, graph_html, graphml)
    return answer.model_dump()


async def _ask_and_close(
    rt: Runtime,
    question: Question,
    method: str,
    options: dict[str, Any] | None,
    on_event: EventSink | None,
) -> Answer:
    """The answer; the LLMs it used (and the variants it built: IP-RAR's reasoning model) are
    closed on the same event loop, which owns their HTTP clients."""
    try:
        return await ask_question(rt, question, method, options, on_event=on_event)
    finally:
        await rt.aclose_llms()


class _Streamed:
    """On a terminal, the reader's text is printed as the model writes it."""

    def __init__(self) -> None:
        self.started = False

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        if kind != "token":
            return
        if not self.started:
            typer.echo("Model (streaming): ", nl=False)
            self.started = True
        typer.echo(data["text"], nl=False)

    def end(self) -> None:
        if self.started:
            typer.echo("")


def export_graph(run: Any, graph_html: Path | None, graphml: Path | None) -> None:
    """Write the local claim graph of a CLAIMS answer (its :attr:`Answer.trace`) as a page
    and/or GraphML."""
    if run is None or getattr(run, "graph", None) is None:
        raise BioragError("--graph-html and --graphml need --method claims")

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


def support_line(support: dict[str, Any], number: dict[str, int]) -> str:
    """``support: <label>; [n] <label> "<deciding span>"; ...`` for one sentence."""
    parts = [f"support: {support['label'].replace('_', ' ')}"]
    joint = support.get("joint")
    if joint and joint["label"] == support["label"]:
        refs = " and ".join(f"[{number[c]}]" if c in number else c for c in joint["passage_ids"])
        parts[0] += f" (only by {refs} together)"
    for v in support.get("verdicts") or []:
        span = " ".join(((v.get("span") or {}).get("text") or "").split())
        span = f' "{span[:117]}..."' if len(span) > 120 else (f' "{span}"' if span else "")
        why = f" ({v['reason']})" if v.get("reason") and v["label"] == "contradicted" else ""
        ref = f"[{number[v['passage_id']]}]" if v["passage_id"] in number else v["passage_id"]
        parts.append(f"{ref} {v['label'].replace('_', ' ')}{why}{span}")
    for cid in support.get("unknown_citations") or []:
        parts.append(f"{cid}: not in the evidence")
    return "; ".join(parts)


def print_answer(ans: dict[str, Any], options: dict[str, str] | None) -> None:
    shown = ans["answer"]
    if options and ans["answer"] in options:
        shown = f"{ans['answer']}. {options[ans['answer']]}"
    if ans["parse_failed"]:
        shown = "(no option could be read from the model's answer; counted as unanswered)"
    typer.echo(f"Answer ({ans['method']}): {shown}")
    number = evidence_numbers(ans)
    for sentence, s in zip(cited_sentences(ans), ans.get("sentences") or [], strict=True):
        typer.echo(f"  - {sentence}")
        if s.get("support"):
            typer.echo(f"      {support_line(s['support'], number)}")
    if ans.get("verification"):
        v = ans["verification"]
        counts = ", ".join(f"{n} {k.replace('_', ' ')}" for k, n in v["counts"].items() if n)
        typer.echo(f"Support ({v['verifier']}): {counts}", err=True)
        if v.get("note"):
            typer.echo(f"note: {v['note']}", err=True)
    details = ans.get("details") or {}
    if details.get("summaries"):
        source_of = {e["doc_id"]: f"{e['corpus']}:{e['source_id']}" for e in ans["evidence"]}
        doc_of = {c["id"]: c["doc_id"] for c in details["claims"]}
        typer.echo("Summaries (the context, in rank order):")
        for i, summ in enumerate(details["summaries"], start=1):
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
    streamed = _Streamed() if not as_json and sys.stdout.isatty() else None
    with common.open_runtime(index) as rt:
        ans = run_question(rt, question, method, opts, mopts, graph_html, graphml, streamed)
    if streamed is not None:
        streamed.end()
    accounting = ans["accounting"]
    if as_json:
        emit_json(ans)
        return
    print_answer(ans, opts)
    for label, path in (("graph page", graph_html), ("GraphML", graphml)):
        if path:
            typer.echo(f"{label}: {path}")
    print_accounting(accounting)
