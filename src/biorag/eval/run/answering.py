"""One (method, question) answered into one prediction record (a line of
``predictions.jsonl``): the method built on a per-question child of the run's runtime, its
failure recorded instead of raised, its BioASQ snippets and MASH-QA sentences taken from the
answer. The runner (:mod:`biorag.eval.run.runner`) calls :func:`answer_question` in this process;
:mod:`biorag.eval.run.on_executor` calls it on Ray actors."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from biorag.asking import PreparedAsk, prepare
from biorag.corpus.datasets.base import QAItem
from biorag.eval.metrics.snippets import MAX_SNIPPETS, chunk_snippets
from biorag.eval.run.scoring import is_multiple_choice
from biorag.eval.run.source_docs import exclusion_for
from biorag.methods.base import Answer
from biorag.runtime import Runtime

log = logging.getLogger("biorag.eval")


async def answer_question(
    base: Runtime,
    method_options: dict[str, dict[str, Any]],
    method: str,
    item: QAItem,
    source_docs: str = "exclude",
) -> dict[str, Any]:
    """Answer ``item`` with ``method`` the way :func:`biorag.asking.ask` does, on the run's runtime
    ``base`` (an LLM client of its own, with its own accounting), its searches leaving out the
    question's own documents as ``source_docs`` says (:mod:`.source_docs`); the prediction
    record, with the error in it when the method failed."""
    start = time.perf_counter()
    answer: Answer | None = None
    prepared: PreparedAsk | None = None
    error = None
    exclusion = exclusion_for(item, source_docs)
    try:
        prepared = prepare(base, item.as_question(), method, method_options.get(method),
                           exclude_docs=exclusion)  # fmt: skip
        answer = await prepared.run()
    except Exception as e:  # recorded and counted, never lost; CancelledError passes
        error = f"{type(e).__name__}: {e}"
        log.debug("%s on %s failed", method, item.id, exc_info=True)
    snippets = None
    try:
        snippets = await asyncio.to_thread(_snippets, base, item, answer)
    except Exception as e:  # the answer stands; its snippets are left out, and said
        log.warning("%s on %s: no snippets for the snippet measures: %s", method, item.id, e)
    # a failed answer's calls count too (the tokens were spent)
    accounting = prepared.accounting.report() if prepared is not None else {}
    rec = _prediction_record(
        item, method, answer, error, accounting, time.perf_counter() - start, snippets
    )
    if exclusion is not None:
        rec["source_docs"] = exclusion.report()
    return rec


def _span_sentences(item: QAItem, answer: Any | None, evidence: list[Any]) -> list[str]:
    """A span question's predicted sentences (MASH-QA sentence retrieval): the answer's
    sentences that are sentences of the given context (what an extractive reader picked), else
    the given passages the answer rests on; [] for other questions."""
    if item.question_type != "span" or answer is None:
        return []
    given = {" ".join(c.split()) for c in item.context}
    picked = [s.text for s in answer.sentences if " ".join(s.text.split()) in given]
    if picked:
        return picked
    return [e.text for e in evidence if e.text and e.corpus == "given"]


def _snippets(rt: Any, item: QAItem, answer: Any | None) -> list[dict[str, Any]] | None:
    """BioASQ: the snippets (article, section, character range) that the answer's retrieved
    chunks cover, for the snippet measures; None for other questions or without retrieval."""
    if answer is None or not item.meta.get("gold_snippet_spans") or not rt.index_paths:
        return None
    chunks = [e for e in answer.evidence if e.corpus != "given" and e.doc_id and e.end]
    docs: dict[str, Any] = {}
    for e in chunks[:MAX_SNIPPETS]:
        if e.doc_id not in docs:
            where = [e.corpus] if e.corpus else None
            docs[e.doc_id] = rt.searcher.get_document(e.doc_id, where, spans=True) or {}
    if any("offsets" not in (d.get("metadata") or {}) for d in docs.values()):
        return None  # not the pooled BioASQ corpus (or built before it kept offsets)
    return chunk_snippets([(e.start or 0, e.end, docs[e.doc_id]) for e in chunks[:MAX_SNIPPETS]])


def _prediction_record(
    item: QAItem,
    method: str,
    answer: Any | None,
    error: str | None,
    accounting: dict[str, Any],
    seconds: float,
    snippets: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The prediction record (one line of ``predictions.jsonl``) of one answer or failure."""
    mc = is_multiple_choice(item)
    prediction: Any = ""
    if answer is not None:
        prediction = answer.exact if answer.exact is not None else answer.answer
    parse_failed = bool(answer.parse_failed) if answer is not None else False
    evidence = list(answer.evidence) if answer is not None else []
    documents: list[str] = []
    for e in evidence:
        if e.corpus == "given":  # the question's own passages are no retrieval
            continue
        doc = str(e.source_id or e.doc_id or "")
        if doc and doc not in documents:
            documents.append(doc)
    return {
        "question_id": item.id,
        "question": item.text,
        "method": method,
        "sentences": _span_sentences(item, answer, evidence),
        "subset": item.subset,
        "question_type": item.question_type,
        "options": item.options,
        "prediction": prediction,
        "answer_text": answer.answer_text if answer is not None else "",
        "gold": item.gold,
        "correct": (error is None and not parse_failed and prediction == item.gold) if mc else None,
        "parse_failed": parse_failed,
        "context": answer.context if answer is not None else "",
        "raw_output": answer.raw_output if answer is not None else "",
        "evidence": [e.chunk_id or "" for e in evidence],
        "documents": documents,
        **({"snippets": snippets} if snippets is not None else {}),
        # the answer's own sentences with their citations and verdicts (citation quality)
        "cited_sentences": [x.model_dump(exclude_none=True) for x in answer.sentences]
        if answer is not None
        else [],
        "verification": answer.verification.model_dump()
        if answer is not None and answer.verification is not None
        else None,
        "notes": list(answer.notes) if answer is not None else [],
        "accounting": {k: accounting.get(k, {}) for k in ("stages", "total")},
        "seconds": round(seconds, 4),
        "error": error,
    }
