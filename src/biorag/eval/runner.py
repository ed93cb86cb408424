"""The resumable evaluation runner: every method on every question of a benchmark.

:func:`run_eval` loads a dataset, answers every (method, question) pair not yet in
``OUT/predictions.jsonl`` (several at once), appends one record per answer as it finishes, then
judges the answers that have an ideal answer (:mod:`biorag.eval.judging`, ``[judge]``) and
scores the run into ``OUT/metrics.json``. A killed run resumes where it stopped: the same
command skips the finished pairs (and judged answers), so the metrics equal those of an
uninterrupted run.

Every (method, question) gets its own LLM client over one shared backend, with its own
:class:`~biorag.llm.accounting.Accounting`, so each record carries that question's calls and
tokens per stage even though questions are answered concurrently. The heavy components
(embedder, searcher, reranker, LLM cache, and second models such as IP-RAR's reasoning model:
:meth:`~biorag.methods.runtime.Runtime.llm_variant`) are built once in one
:class:`~biorag.methods.runtime.Runtime`, shared through its per-question children
(:meth:`~biorag.methods.runtime.Runtime.for_question`), and closed at the end.

The parts live beside this module: :mod:`biorag.eval.run_config` (``run.json`` and the check on
resume), :mod:`biorag.eval.run_metrics` (per-method metrics) and :mod:`biorag.eval.records`
(the run directory's files and the append-only prediction log). Their public names are
re-exported here.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biorag.config import Settings
from biorag.corpus.audit import SKIPPED_FILE, SkipSummary, summarize_skips
from biorag.corpus.datasets.base import QAItem
from biorag.errors import BioragError
from biorag.eval.judging import JudgeModel, judge_answers, open_judge, run_judged_blocks
from biorag.eval.leakage import check_overlap
from biorag.eval.records import (
    METRICS_FILE,
    PREDICTIONS_FILE,
    PredictionWriter,
    RunDirLock,
    latest_records,
    read_predictions,
)
from biorag.eval.run_config import config_differences as config_differences
from biorag.eval.run_metrics import is_multiple_choice, run_metrics
from biorag.eval.run_setup import (
    build_methods,
    check_arguments,
    claim_run_dir,
    load_questions,
    mask_questions,
)
from biorag.llm.shared import SharedLLM
from biorag.methods.runtime import Runtime
from biorag.util.files import write_json_atomic
from biorag.util.progress import progress_bar

log = logging.getLogger("biorag.eval")

DEFAULT_CONCURRENCY = 4
MAX_CONSECUTIVE_ERRORS = 25


@dataclass
class EvalSummary:
    """What one call of :func:`run_eval` did and the metrics of the whole run directory."""

    out_dir: Path
    metrics: dict[str, Any]
    n_items: int
    answered_now: int = 0
    errors_now: int = 0
    already_done: int = 0
    skipped_records: int = 0
    #: the dataset's skipped records: counts by kind, the first few, the file with all of them
    skips: SkipSummary = field(default_factory=SkipSummary)
    judged_now: int = 0
    judge_failed_now: int = 0
    already_judged: int = 0
    notes: list[str] = field(default_factory=list)


# -- one answer --------------------------------------------------------------------------------


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
    from biorag.eval.metrics.snippets import MAX_SNIPPETS, chunk_snippets

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
        "notes": list(answer.notes) if answer is not None else [],
        "accounting": {k: accounting.get(k, {}) for k in ("stages", "total")},
        "seconds": round(seconds, 4),
        "error": error,
    }


# -- the run -----------------------------------------------------------------------------------


def run_eval(
    settings: Settings, dataset: str, data_path: str | Path, **options: Any
) -> EvalSummary:
    """Answer every (method, question) not yet in ``out_dir`` and score the whole run.

    Takes the keyword arguments of :func:`arun_eval` (``methods`` and ``out_dir`` are required).
    ``retry_errors``: pairs whose latest record is an error are answered again on resume.
    ``judge`` (``auto``/``on``/``off``) replaces ``judge.mode``; ``judge_backend`` replaces the
    judge's configured backend (tests).
    ``runtime`` (a base :class:`Runtime` whose embedder/searcher/reranker are shared),
    ``backend`` (an LLM backend replacing the configured one) and ``loader`` (replacing
    ``biorag.corpus.datasets.load_dataset``) exist for tests and scripts. After
    ``max_consecutive_errors`` failed answers in a row the run stops with an error (a server is
    down, say); the answers so far are kept and the same command resumes.
    """
    return asyncio.run(arun_eval(settings, dataset, data_path, **options))


async def arun_eval(
    settings: Settings,
    dataset: str,
    data_path: str | Path,
    *,
    split: str | None = None,
    setting: str | None = None,
    index_paths: list[Path] | None = None,
    methods: list[str],
    method_options: dict[str, dict[str, Any]] | None = None,
    out_dir: str | Path,
    limit: int | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    retry_errors: bool = True,
    runtime: Runtime | None = None,
    backend: Any | None = None,
    loader: Callable[..., Any] | None = None,
    max_consecutive_errors: int = MAX_CONSECUTIVE_ERRORS,
    judge: str | None = None,
    judge_backend: Any | None = None,
    overlap: str = "refuse",
    scoring: str = "official",
    mask_entities: bool = False,
) -> EvalSummary:
    """:func:`run_eval` for code already inside an event loop. ``overlap``: what to do with
    questions that went into a knowledge graph a method reads (:mod:`biorag.eval.leakage`);
    ``scoring``: ``official`` or ``biorag`` (:mod:`biorag.eval.metrics.official`);
    ``mask_entities``: mask each question with its passages first (:mod:`.masked_items`)."""
    started = time.perf_counter()
    out = Path(out_dir)
    if loader is None:
        from biorag.corpus.datasets import canonical_name

        dataset = canonical_name(dataset)
    index_paths = [Path(p) for p in (index_paths or [])]
    method_options = dict(method_options or {})
    check_arguments(methods, method_options, concurrency, scoring, limit)
    loaded, items, skipped = load_questions(loader, dataset, data_path, split, setting, limit)

    shared = SharedLLM(settings, backend)
    base = runtime if runtime is not None else Runtime(settings, index_paths)
    judge_model: JudgeModel | None = None
    dir_lock: RunDirLock | None = None
    try:
        effective, kg_dirs = build_methods(methods, base, method_options, index_paths, items)
        overlap_check = check_overlap(items, kg_dirs, overlap)
        items = overlap_check.items
        mask_stats: dict[str, Any] | None = None
        if mask_entities:
            items, mask_stats = await mask_questions(items, shared)
        judge_model, judge_note = open_judge(
            settings, items, judge, backend=judge_backend, answering=shared
        )
        run = {
            "dataset": dataset, "data_path": data_path, "split": split, "setting": setting,
            "index_paths": index_paths, "methods": methods, "method_options": method_options,
            "effective": effective, "mask_entities": mask_entities, "limit": limit,
        }  # fmt: skip
        dir_lock = claim_run_dir(out, settings, shared, run, items, skipped, loaded)
        summary, pending = _plan(out, items, methods, retry_errors, skipped)
        if pending:
            bar = progress_bar(len(pending), f"eval {dataset}", unit="answer")
            await _answer_all(pending, base, shared, method_options, out / PREDICTIONS_FILE,
                              concurrency, max_consecutive_errors, summary, bar)  # fmt: skip
        scope = (dataset, split, setting, items, methods)
        metrics = await _judge_and_score(out, scope, judge_model, judge_note, summary, started,
                                         scoring)  # fmt: skip
        if mask_stats is not None:
            metrics["masking"] = mask_stats
        if overlap_check.kgs:
            metrics["kg_overlap"] = {**overlap_check.to_dict(), "note": overlap_check.note()}
        write_json_atomic(out / METRICS_FILE, metrics)
    finally:
        await _release(dir_lock, judge_model, shared, base, own_runtime=runtime is None)
    summary.metrics = metrics
    return summary


async def _release(
    dir_lock: RunDirLock | None,
    judge_model: JudgeModel | None,
    shared: SharedLLM,
    base: Runtime,
    *,
    own_runtime: bool,
) -> None:
    """Release the run directory and close the run's models; a caller's runtime stays open
    (only its LLMs are closed: they were bound to this run's event loop)."""
    if dir_lock is not None:
        dir_lock.release()
    if judge_model is not None:
        await judge_model.aclose()
    await shared.aclose()
    if own_runtime:
        await base.aclose()
    else:
        await base.aclose_llms()


async def _judge_and_score(
    out: Path,
    scope: tuple[str, str | None, str | None, list[QAItem], list[str]],
    judge_model: JudgeModel | None,
    judge_note: str | None,
    summary: EvalSummary,
    started: float,
    scoring: str,
) -> dict[str, Any]:
    """Judge the answers not judged yet (with a judge model), then score every method of the
    run directory: its ``metrics.json`` content (``scope``: dataset, split, setting, questions,
    methods)."""
    dataset, split, setting, items, methods = scope
    if judge_model is not None:
        stats = await judge_answers(out, items, methods, judge_model)
        summary.judged_now, summary.judge_failed_now = stats.judged_now, stats.failed_now
        summary.already_judged, judge_note = stats.already_judged, stats.note
    records = read_predictions(out / PREDICTIONS_FILE)
    judged = run_judged_blocks(out, items, records, methods, judge_model, judge_note)
    wall_s = time.perf_counter() - started
    return run_metrics(
        dataset, split, setting, items, records, methods, judged, wall_s=wall_s, scoring=scoring
    )


def _plan(
    out: Path,
    items: list[QAItem],
    methods: list[str],
    retry_errors: bool,
    skipped: list[Any],
) -> tuple[EvalSummary, list[tuple[str, QAItem]]]:
    """The run's summary so far and the (method, question) pairs still to answer: those
    without a record in ``out``, and with ``retry_errors`` those whose last record failed.
    Writes the skipped records' list next to the predictions."""
    skips = summarize_skips(skipped, out / SKIPPED_FILE if skipped else None)
    latest = latest_records(read_predictions(out / PREDICTIONS_FILE, repair=True))
    done = {key for key, r in latest.items() if not (retry_errors and r.get("error"))}
    pending = [(m, it) for it in items for m in methods if (m, it.id) not in done]
    summary = EvalSummary(
        out_dir=out,
        metrics={},
        n_items=len(items),
        already_done=len(items) * len(methods) - len(pending),
        skipped_records=len(skipped),
        skips=skips,
    )
    return summary, pending


async def _answer_all(
    pending: list[tuple[str, QAItem]],
    base: Runtime,
    shared: SharedLLM,
    method_options: dict[str, dict[str, Any]],
    path: Path,
    concurrency: int,
    max_consecutive_errors: int,
    summary: EvalSummary,
    bar: Any,
) -> None:
    from biorag.llm.accounting import Accounting
    from biorag.methods.registry import build_method

    queue = iter(pending)
    state: dict[str, Any] = {"consecutive": 0, "last_error": "", "stop": False}

    async def answer_one(method: str, item: QAItem) -> dict[str, Any]:
        acc = Accounting()
        rt = base.for_question(shared.client(acc))
        start = time.perf_counter()
        answer, error = None, None
        try:
            qa = build_method(method, rt, method_options.get(method))
            answer = await qa.answer(item.as_question())
        except Exception as e:  # recorded and counted, never lost; CancelledError passes
            error = f"{type(e).__name__}: {e}"
            log.debug("%s on %s failed", method, item.id, exc_info=True)
        snippets = None
        try:
            snippets = await asyncio.to_thread(_snippets, rt, item, answer)
        except Exception as e:  # the answer stands; its snippets are left out, and said
            log.warning("%s on %s: no snippets for the snippet measures: %s", method, item.id, e)
        return _prediction_record(
            item, method, answer, error, acc.report(), time.perf_counter() - start, snippets
        )

    async def worker(writer: PredictionWriter) -> None:
        for method, item in queue:
            if state["stop"]:
                return
            rec = await answer_one(method, item)
            writer.append(rec)
            bar.update(1)
            summary.answered_now += 1
            if rec["error"]:
                summary.errors_now += 1
                state["consecutive"] += 1
                state["last_error"] = f"{method} on {item.id}: {rec['error']}"
                log.warning("%s", state["last_error"])
                if state["consecutive"] >= max_consecutive_errors:
                    state["stop"] = True
            else:
                state["consecutive"] = 0

    try:
        with PredictionWriter(path) as writer:
            await asyncio.gather(*(worker(writer) for _ in range(concurrency)))
    finally:
        bar.close()
    if state["stop"]:
        raise BioragError(
            f"stopped after {state['consecutive']} failed answers in a row (last: "
            f"{state['last_error']}); fix the cause and run the same command again to resume"
        )
