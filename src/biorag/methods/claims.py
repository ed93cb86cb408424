"""CLAIMS: claims from retrieved chunks, a local claim graph, layerwise summaries, then QA.

The stages, each with an LLM and a no-LLM operator (``llm.backend = "none"``):

1. query: rewritten question + options + HyDE candidate answer (no-LLM: question + options);
2. retrieval: ``per_corpus_k`` chunks from every index, re-chunked to ``max_chunk_tokens`` and
   cleaned of special characters;
3. extraction: claims and one triple per claim (``mode``: ``faithful`` = one call per item,
   ``batched`` = claims and triples together, one call per chunk);
4. graph: claims scored by the reranker, entities deduplicated (UPGMA, cosine >= 0.8), the
   undirected claim multigraph, denoising (``denoise``: keep | drop | downweight);
5. claims of interest (top 10, test summaries, 1-hop filtering) and layerwise summaries;
6. answer: the summaries in rank order as the context; a reasoning call, then
   ``{"answer": "<letter>"}`` (no-LLM: the option-scoring floor).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from biorag.corpus.chunking import rechunk
from biorag.corpus.models import Chunk
from biorag.corpus.text import clean_text
from biorag.corpus.tokens import default_counter
from biorag.embed.rerank import BiEncoderReranker
from biorag.errors import BioragError
from biorag.extract import build_extraction
from biorag.extract.grounding import grounded_share
from biorag.graph.claim_graph import ClaimGraph, DirectedClaimView
from biorag.graph.dedup import deduplicate_entities
from biorag.graph.denoise import denoise
from biorag.graph.judges import EmbeddingRelevanceJudge, LLMRelevanceJudge
from biorag.methods.base import (
    Answer,
    QAMethod,
    Question,
    retrieve_passages,
)
from biorag.methods.context import ContextItem, answer_from_context, typed_options
from biorag.methods.details import (
    ClaimOfInterest,
    ClaimRow,
    ClaimsDetails,
    QueryParts,
    SummaryRow,
)
from biorag.methods.stages import stage as stage_event
from biorag.retrieve.query import build_query, plain_query
from biorag.summarize import (
    ExtractiveSummarizer,
    LLMSummarizer,
    select_claims_of_interest,
    summarize_layerwise,
)

DEFAULTS: dict[str, Any] = {
    "mode": "batched",
    "strategy": "single_stage",
    "per_corpus_k": 3,
    "max_chunk_tokens": 1024,
    "retriever": None,
    "denoise": "keep",
    "top_k": 10,
    "token_limit": 2000,
    "dedup_threshold": 0.8,
    # true: claims of interest and layers follow head-to-tail chains (object -> subject) only;
    # the paper's graph is undirected (seed notes: directed edges are an open question)
    "directed": False,
    # the paper's layer summary prompt has no question and its test summary prompt no options;
    # true shows them (biorag's earlier prompts did)
    "layer_question": False,
    # biorag's addition: LLM claims whose words are mostly absent from their chunk are dropped
    # (biorag.extract.grounding); false keeps every claim, as the paper does
    "drop_ungrounded_claims": True,
    "test_options": False,
    # biorag's addition: claims of interest and the claims of their summaries only at least
    # this relevant to the question (the embedder's cosine of claim and question, whatever
    # rerank.backend; the best claim always stays; None: all, as the paper). Chosen on the demo
    # set, measured on 200 other PubMedQA questions: benchmarks/bench_summary_relevance.py
    "summary_min_relevance": 0.4,
}
NULLABLE = frozenset({"summary_min_relevance"})  # None: the paper's summaries, every claim
MODES = ("batched", "faithful")
M = TypeVar("M", bound=BaseModel)


@dataclass
class ClaimsRun:
    """Everything one CLAIMS answer was built from (for JSON, the graph page and benchmarks)."""

    question: Question
    query: Any = None
    passages: list[Any] = field(default_factory=list)
    claims: list[Any] = field(default_factory=list)
    graph: Any = None
    coi: list[Any] = field(default_factory=list)
    summaries: list[Any] = field(default_factory=list)
    extraction_stats: dict[str, Any] = field(default_factory=dict)
    denoise_report: Any = None
    seconds: dict[str, float] = field(default_factory=dict)


class Claims(QAMethod):
    """Options: see ``DEFAULTS`` (``--method-options '{"mode": "faithful"}'``)."""

    name = "claims"
    needs_index = True

    def __init__(self, runtime, **options: Any):

        unknown = set(options) - set(DEFAULTS)
        if unknown:
            raise BioragError(
                f"unknown CLAIMS option(s) {sorted(unknown)}; allowed: {sorted(DEFAULTS)}"
            )

        typed = typed_options("CLAIMS", options, DEFAULTS, nullable=NULLABLE)
        merged = {**DEFAULTS, **typed}
        if merged["mode"] not in MODES:
            raise BioragError(f"CLAIMS mode must be one of {MODES}, got {merged['mode']!r}")
        if merged["denoise"] not in ("keep", "drop", "downweight"):
            raise BioragError("CLAIMS denoise must be keep, drop or downweight")
        super().__init__(runtime, **merged)

    # -- stages ----------------------------------------------------------------------------
    async def _retrieve(self, run: ClaimsRun) -> list[Any]:

        q = run.question
        if q.passages:  # nothing to search: the rewrite and HyDE calls would be wasted
            run.query = plain_query(q.text, q.options)
        else:
            run.query = await build_query(self.rt.llm, q.text, q.options)
        retriever = self.options["retriever"] or self.rt.settings.retrieval.retriever
        k = int(self.options["per_corpus_k"])
        run.passages = await retrieve_passages(self.rt, q, run.query.text, k, retriever)
        limit = int(self.options["max_chunk_tokens"])
        chunks: list[Chunk] = []
        for unit_id, doc_id, unit_text in pack_passages(run.passages, limit):
            for i, piece in enumerate(rechunk(unit_text, limit)):
                text = clean_text(piece)
                if text.strip():
                    chunks.append(
                        Chunk(
                            id=f"{unit_id}#{i}",
                            doc_id=doc_id,
                            index=i,
                            start=0,
                            end=len(text),
                            text=text,
                        )
                    )
        return chunks

    async def _extract(self, run: ClaimsRun, chunks: list[Any]) -> None:

        extraction = build_extraction(
            self.rt.llm,
            mode=self.options["mode"],
            strategy=self.options["strategy"],
            max_chunk_tokens=None,  # retrieval already re-chunked to max_chunk_tokens
            ground_claims=bool(self.options["drop_ungrounded_claims"]),
        )
        claims = await extraction.run(chunks)
        # Claims point at the retrieved chunk, not at the re-chunked piece, and a claim of
        # passages packed together at the passage it was taken from.
        texts = {p.chunk_id: p.text for p in run.passages}
        for c in claims:
            c.chunk_id = source_passage(c.text, c.chunk_id.split("#", 1)[0], texts)
        run.claims = claims
        run.extraction_stats = dict(getattr(extraction, "stats", {}) or {})

    async def _build_graph(self, run: ClaimsRun) -> None:

        q = run.question
        with_triples = [c for c in run.claims if c.triple is not None]
        if with_triples:
            texts = [c.text for c in with_triples]
            reranker = self.rt.reranker
            scores = await asyncio.to_thread(reranker.score, q.text, texts)
            # relevance on one scale whatever the reranker: the embedder's cosine (the same
            # numbers when the reranker is the bi-encoder over this embedder)
            cosine = scores
            same = isinstance(reranker, BiEncoderReranker) and reranker.embedder is self.rt.embedder
            if not same:
                cosine = await asyncio.to_thread(
                    BiEncoderReranker(self.rt.embedder).score, q.text, texts
                )
            for c, s, r in zip(with_triples, scores, cosine, strict=True):
                c.score, c.relevance = float(s), float(r)
        names = [n for c in with_triples for n in (c.triple.subject, c.triple.object)]
        clusters = await asyncio.to_thread(
            deduplicate_entities,
            names,
            self.rt.embedder,
            threshold=float(self.options["dedup_threshold"]),
        )
        run.graph = ClaimGraph.build(with_triples, clusters)
        if self.options["denoise"] != "keep":
            llm = self.rt.llm
            judge = (
                LLMRelevanceJudge(llm, batched=self.options["mode"] == "batched")
                if llm is not None
                else EmbeddingRelevanceJudge(self.rt.embedder)
            )
            run.denoise_report = await denoise(run.graph, q.text, self.options["denoise"], judge)

    def _summarizer(self) -> Any:

        limit = int(self.options["token_limit"])
        if self.rt.llm is None:
            # Extractive summaries are whole sentences: a smaller share of the budget per root
            # keeps the floor's context near the size an LLM summary would have.
            return ExtractiveSummarizer(self.rt.embedder, token_limit=max(limit // 4, 128))
        return LLMSummarizer(
            self.rt.llm,
            mode=self.options["mode"],
            token_limit=limit,
            embedder=self.rt.embedder,
            layer_question=bool(self.options["layer_question"]),
            test_options=bool(self.options["test_options"]),
        )

    async def _summarize(self, run: ClaimsRun) -> None:

        q = run.question
        if not run.graph.claims:
            return
        summarizer = self._summarizer()
        graph = run.graph
        if self.options["directed"]:  # walk head-to-tail chains only (the paper: undirected)
            graph = DirectedClaimView(run.graph)
        run.coi = await select_claims_of_interest(
            graph,
            q.text,
            q.options,
            self.rt.reranker,
            summarizer,
            top_k=int(self.options["top_k"]),
            min_score=self.options["summary_min_relevance"],
        )
        run.summaries = await summarize_layerwise(
            graph, [c.claim_id for c in run.coi], summarizer, q.text,
            min_relevance=self.options["summary_min_relevance"],
        )  # fmt: skip

    # -- the method ------------------------------------------------------------------------
    async def answer(self, question: Question) -> Answer:

        run = ClaimsRun(question=question)
        t = time.perf_counter()
        chunks = await self._retrieve(run)
        run.seconds["retrieve"] = time.perf_counter() - t
        for stage, step in (
            ("extract", lambda: self._extract(run, chunks)),
            ("graph", lambda: self._build_graph(run)),
            ("summarize", lambda: self._summarize(run)),
        ):
            t = time.perf_counter()
            with stage_event(stage):
                await step()
            run.seconds[stage] = time.perf_counter() - t
        t = time.perf_counter()
        # Faithful: the paper's two calls (reason, then {"answer": ...}); batched: one call
        # returning reasoning and letter as JSON, the extraction call only as a fallback.
        out = await answer_from_context(
            self.rt,
            self.name,
            question,
            [
                ContextItem(s.text.strip(), self._chunks_of(run, s.root_claim_id))
                for s in run.summaries
                if s.text.strip()
            ],
            run.passages,
            reader="one-call" if self.options["mode"] == "batched" else "two-call",
            details=self.details(run),
            notes=["rule-based claims, extractive summaries"] if self.rt.llm is None else [],
            floor_items=[ContextItem(p.text, [p.chunk_id]) for p in run.passages],
            all_evidence=True,
        )
        run.seconds["answer"] = time.perf_counter() - t
        if isinstance(out.details, ClaimsDetails):
            out.details.seconds = run.seconds
        if out.llm_used and not run.summaries:
            ungrounded = run.extraction_stats.get("ungrounded_claims", 0)
            out.notes.append(
                "CLAIMS: no usable claims in the retrieved text (claims kept: "
                f"{len(run.claims)}, dropped as not in their chunk: {ungrounded}); the answer "
                "was read with no context"
            )
        return out.with_trace(run)

    @staticmethod
    def _chunks_of(run: ClaimsRun, key: str) -> list[str]:
        """The chunks behind a summary (by root claim id) or a chunk id itself."""
        for s in run.summaries:
            if s.root_claim_id == key:
                claims = run.graph.claims
                return sorted({claims[c].chunk_id for c in s.claim_ids if c in claims})
        return [key] if any(p.chunk_id == key for p in run.passages) else []

    def details(self, run: ClaimsRun) -> ClaimsDetails:
        """The JSON the CLI shows under ``--json``: claims, graph, claims of interest, summaries."""
        graph = run.graph.to_dict() if run.graph is not None else {}
        if run.graph is not None:
            graph["layer_sizes"] = {s.root_claim_id: s.layer_sizes for s in run.summaries}
        return ClaimsDetails(
            query=QueryParts.model_validate(run.query.__dict__) if run.query else None,
            claims=_rows(
                ClaimRow, run.claims, triple=lambda c: c.triple.model_dump() if c.triple else None
            ),
            claims_of_interest=_rows(ClaimOfInterest, run.coi, id=lambda c: c.claim_id),
            summaries=_rows(SummaryRow, run.summaries),
            graph=graph,
            extraction=run.extraction_stats,
            denoise=run.denoise_report.__dict__ if run.denoise_report is not None else None,
        )


def _rows(model: type[M], items: Iterable[Any], **made: Callable[[Any], Any]) -> list[M]:
    """One ``model`` per item, each field the item's attribute of that name, or ``made[field]``
    of the item."""
    return [
        model.model_validate(
            {f: made[f](x) if f in made else getattr(x, f) for f in model.model_fields}
        )
        for x in items
    ]


#: separates the passages packed into one extraction unit (:func:`pack_passages`)
PACKED = "+"


def pack_passages(passages: list[Any], limit: int) -> list[tuple[str, str, str]]:
    """``(unit id, doc id, text)`` extraction units: consecutive passages of the same document
    joined (blank line between) while the unit stays within ``limit`` tokens; a unit of several
    passages has the id ``id1+id2+...``. A PubMedQA abstract given as its sections then costs
    one extraction (and gleaning) call instead of one per section, as the paper's 1,000-token
    chunks of a document would."""

    counter = default_counter()
    units: list[tuple[list[str], str, list[str], int]] = []
    for p in passages:
        size = counter.count(p.text)
        last = units[-1] if units else None
        if last is not None and last[1] == p.doc_id and last[3] + size <= limit:
            last[0].append(p.chunk_id)
            last[2].append(p.text)
            units[-1] = (last[0], last[1], last[2], last[3] + size)
        else:
            units.append(([p.chunk_id], p.doc_id, [p.text], size))
    return [(PACKED.join(ids), doc, "\n\n".join(parts)) for ids, doc, parts, _ in units]


def source_passage(claim: str, unit_id: str, texts: dict[str, str]) -> str:
    """The passage of a packed unit that ``claim`` was taken from: the one holding the largest
    share of its content words (the first on a tie); ``unit_id`` itself for a single passage."""
    if unit_id in texts:
        return unit_id

    ids = [i for i in unit_id.split(PACKED) if i in texts]
    if not ids:
        return unit_id
    flat = " ".join(claim.split()).lower()
    verbatim = [i for i in ids if flat and flat in " ".join(texts[i].split()).lower()]
    if verbatim:
        return verbatim[0]
    return max(ids, key=lambda i: (grounded_share(claim, texts[i]), -ids.index(i)))
