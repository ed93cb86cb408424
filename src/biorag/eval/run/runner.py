"""The resumable evaluation runner: every method on every question of a benchmark.

:func:`run_eval` loads a dataset, answers every (method, question) pair not yet in
``OUT/predictions.jsonl`` (several at once), appends one record per answer as it finishes, then
judges the answers that have an ideal answer (:mod:`biorag.eval.judging.judge_run`, ``[judge]``) and
scores the run into ``OUT/metrics.json``. A killed run resumes where it stopped: the same
command skips the finished pairs (and judged answers), so the metrics equal those of an
uninterrupted run.

Every (method, question) gets its own LLM client over one shared backend, with its own
:class:`~biorag.llm.accounting.Accounting`, so each record carries that question's calls and
tokens per stage even though questions are answered concurrently. The heavy components
(embedder, searcher, reranker, LLM cache, and second models such as IP-RAR's reasoning model:
:meth:`~biorag.runtime.Runtime.llm_variant`) are built once in one
:class:`~biorag.runtime.Runtime`, shared through its per-question children
(:meth:`~biorag.runtime.Runtime.for_question`), and closed at the end.

The parts live beside this module: :mod:`biorag.eval.run.config` (``run.json`` and the check on
resume), :mod:`biorag.eval.run.scoring` (per-method metrics) and :mod:`biorag.eval.run.records`
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
from biorag.corpus.datasets import canonical_name
from biorag.corpus.datasets.base import QAItem
from biorag.errors import BioragError
from biorag.eval.judging.judge_run import JudgeModel, judge_answers, open_judge, run_judged_blocks
from biorag.eval.run.answering import answer_question
from biorag.eval.run.config import config_differences as config_differences
from biorag.eval.run.leakage import check_overlap
from biorag.eval.run.near_duplicates import THRESHOLD, ParaphraseModel
from biorag.eval.run.on_executor import absolute_paths, answer_on_executor
from biorag.eval.run.records import (
    METRICS_FILE,
    PREDICTIONS_FILE,
    PredictionWriter,
    RunDirLock,
    latest_records,
    read_predictions,
)
from biorag.eval.run.scoring import run_metrics
from biorag.eval.run.setup import (
    build_methods,
    check_arguments,
    claim_run_dir,
    load_questions,
    mask_questions,
)
from biorag.eval.run.source_docs import check_policy, policy_effect, source_exclusion
from biorag.executor.base import settings_for_workers
from biorag.llm.shared import SharedLLM
from biorag.runtime import Runtime
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
    #: where this call answered, per worker (an executor other than local; else empty)
    executor: dict[str, Any] = field(default_factory=dict)


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
    overlap_threshold: float = THRESHOLD,
    source_docs: str = "exclude",
    scoring: str = "official",
    mask_entities: bool = False,
    executor: Any | None = None,
) -> EvalSummary:
    """:func:`run_eval` for code already inside an event loop. ``overlap``: what to do with
    questions that went into a knowledge graph a method reads, or paraphrase one that did (cosine
    >= ``overlap_threshold``) (:mod:`biorag.eval.run.leakage`);
    ``source_docs``: ``exclude`` (each question's own source document never reaches its
    context), ``exclude-gold`` or ``allow`` (:mod:`.source_docs`);
    ``scoring``: ``official`` or ``biorag`` (:mod:`biorag.eval.metrics.official`);
    ``mask_entities``: mask each question with its passages first (:mod:`.masking`);
    ``executor``: a :mod:`biorag.executor` other than local answers on its workers
    (:mod:`.on_executor`), each building the run's components from ``settings``."""
    started = time.perf_counter()
    out = Path(out_dir)
    if loader is None:
        dataset = canonical_name(dataset)
    index_paths = [Path(p) for p in (index_paths or [])]
    method_options = dict(method_options or {})
    check_arguments(methods, method_options, concurrency, scoring, limit)
    check_policy(source_docs)
    if not 0 < overlap_threshold <= 1:
        raise BioragError(
            f"overlap threshold must be a cosine in (0, 1], not {overlap_threshold}",
            param="overlap_threshold",
        )
    loaded, items, skipped = load_questions(loader, dataset, data_path, split, setting, limit)

    shared = SharedLLM(settings, backend)  # the run's model: every answer's client draws on it
    base = (
        Runtime(settings, index_paths, shared_llm=shared)
        if runtime is None
        else runtime.using_llm(shared)
    )
    judge_model: JudgeModel | None = None
    dir_lock: RunDirLock | None = None
    try:
        effective, kg_dirs = build_methods(methods, base, method_options, index_paths, items)
        paraphrases = ParaphraseModel(base)  # the model is built only if a KG needs it
        try:
            overlap_check = check_overlap(items, kg_dirs, overlap, paraphrases=paraphrases,
                                          threshold=overlap_threshold)  # fmt: skip
        finally:
            paraphrases.close()
        items = overlap_check.items
        mask_stats: dict[str, Any] | None = None
        if mask_entities:
            items, mask_stats = await mask_questions(items, shared)
        judge_model, judge_note = open_judge(
            settings, items, judge, backend=judge_backend, answering=shared
        )
        # recorded where it changes something: a resume under a policy that does the same runs
        changes = bool(index_paths) and policy_effect(source_docs, items) is not None
        run = {
            "dataset": dataset, "data_path": data_path, "split": split, "setting": setting,
            "index_paths": index_paths, "methods": methods, "method_options": method_options,
            "effective": effective, "mask_entities": mask_entities, "limit": limit,
            "source_docs": source_docs if changes else None,
            "overlap_excluded": overlap_check.overlapping if overlap == "exclude" else [],
        }  # fmt: skip
        dir_lock = claim_run_dir(out, settings, shared, run, items, skipped, loaded)
        summary, pending = _plan(out, items, methods, retry_errors, skipped)
        if pending:
            bar = progress_bar(len(pending), f"eval {dataset}", unit="answer")
            tally = _Tally(summary, bar, max_consecutive_errors)
            try:
                if executor is not None and executor.kind != "local":
                    args = (settings_for_workers(settings), [str(p.resolve()) for p in index_paths],
                            absolute_paths(method_options), concurrency, source_docs)  # fmt: skip
                    await answer_on_executor(pending, executor, args, out / PREDICTIONS_FILE,
                                             tally.add)  # fmt: skip
                    summary.executor = executor.stats()
                else:
                    await _answer_all(pending, base, method_options, out / PREDICTIONS_FILE,
                                      concurrency, tally, source_docs=source_docs)  # fmt: skip
            finally:
                bar.close()
            tally.raise_if_stopped()
        scope = (dataset, split, setting, items, methods)
        metrics = await _judge_and_score(out, scope, judge_model, judge_note, summary, started,
                                         scoring)  # fmt: skip
        if mask_stats is not None:
            metrics["masking"] = mask_stats
        if overlap_check.kgs:
            metrics["kg_overlap"] = {**overlap_check.to_dict(), "note": overlap_check.note()}
        if index_paths:  # only searches meet documents
            latest = latest_records(read_predictions(out / PREDICTIONS_FILE))
            metrics["source_exclusion"] = source_exclusion(source_docs, items, latest, methods)
        write_json_atomic(out / METRICS_FILE, metrics)
    finally:
        await _release(dir_lock, judge_model, shared, runtime or base, own_runtime=runtime is None)
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


class _Tally:
    """Counts the answers as they are written; asks to stop after ``limit`` failures in a row."""

    def __init__(self, summary: EvalSummary, bar: Any, limit: int) -> None:
        self.summary, self.bar, self.limit = summary, bar, limit
        self.consecutive, self.last_error, self.stop = 0, "", False

    def add(self, rec: dict[str, Any]) -> bool:
        self.bar.update(1)
        self.summary.answered_now += 1
        if rec["error"]:
            self.summary.errors_now += 1
            self.consecutive += 1
            self.last_error = f"{rec['method']} on {rec['question_id']}: {rec['error']}"
            log.warning("%s", self.last_error)
            self.stop = self.stop or self.consecutive >= self.limit
        else:
            self.consecutive = 0
        return self.stop

    def raise_if_stopped(self) -> None:
        if self.stop:
            raise BioragError(
                f"stopped after {self.consecutive} failed answers in a row (last: "
                f"{self.last_error}); fix the cause and run the same command again to resume"
            )


async def _answer_all(
    pending: list[tuple[str, QAItem]],
    base: Runtime,
    method_options: dict[str, dict[str, Any]],
    path: Path,
    concurrency: int,
    tally: _Tally,
    *,
    source_docs: str,
) -> None:
    """Answer ``pending`` on ``base`` with the methods' options, leaving out what the
    ``source_docs`` policy says (:mod:`.source_docs`)."""
    queue = iter(pending)

    async def worker(writer: PredictionWriter) -> None:
        for method, item in queue:
            if tally.stop:
                return
            rec = await answer_question(base, method_options, method, item, source_docs)
            writer.append(rec)
            tally.add(rec)

    with PredictionWriter(path) as writer:
        await asyncio.gather(*(worker(writer) for _ in range(concurrency)))
