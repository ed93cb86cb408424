"""The resumable evaluation runner: every method on every question of a benchmark.

:func:`run_eval` loads a dataset, answers every (method, question) pair not yet in
``OUT/predictions.jsonl`` (several at once), appends one record per answer as it finishes, then
scores the run into ``OUT/metrics.json``. A killed run resumes where it stopped: the same
command skips the finished pairs, so the metrics equal those of an uninterrupted run.

Every (method, question) gets its own LLM client over one shared backend, with its own
:class:`~biorag.llm.accounting.Accounting`, so each record carries that question's calls and
tokens per stage even though questions are answered concurrently. The heavy components
(embedder, searcher, reranker, LLM cache) are built once and shared.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from biorag.config import Settings, masked_dict
from biorag.errors import BioragError
from biorag.eval.datasets.base import QAItem
from biorag.eval.records import (
    METRICS_FILE,
    PREDICTIONS_FILE,
    RUN_FILE,
    PredictionWriter,
    latest_records,
    read_json,
    read_predictions,
)
from biorag.methods.base import Runtime
from biorag.util.files import write_json_atomic

log = logging.getLogger("biorag.eval")

DEFAULT_CONCURRENCY = 4
MAX_CONSECUTIVE_ERRORS = 25

# run.json keys a resumed run must match (the rest is recorded for information).
_COMPARED = ("dataset", "split", "setting", "methods", "method_options", "indexes", "models")


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
    notes: list[str] = field(default_factory=list)


# -- shared components, one LLM client per question --------------------------------------------


class _SharedLLM:
    """One backend (behind one concurrency limit) and one cache for all per-question clients."""

    def __init__(self, settings: Settings, backend: Any | None) -> None:
        from biorag.llm.factory import make_backend

        self.cfg = settings.llm
        self.backend = backend if backend is not None else make_backend(settings)
        self.limited: Any = None
        self.cache: Any = None
        if self.backend is not None:
            from biorag.llm.cache import SQLiteCache
            from biorag.llm.middleware import ConcurrencyLimit

            self.limited = ConcurrencyLimit(self.backend, self.cfg.concurrency)
            if self.cfg.cache:
                self.cache = SQLiteCache(settings.llm_cache_path())

    @property
    def model(self) -> str | None:
        return getattr(self.backend, "model", None) if self.backend is not None else None

    def client(self, accounting: Any) -> Any | None:
        """A client of its own (own accounting) over the shared backend; None without an LLM."""
        if self.limited is None:
            return None
        from biorag.llm.factory import LLM

        return LLM(
            self.limited,
            accounting=accounting,
            cache=self.cache,
            max_retries=self.cfg.max_retries,
            concurrency=self.cfg.concurrency,
            max_tokens=self.cfg.max_tokens,
            temperature=self.cfg.temperature,
        )

    async def aclose(self) -> None:
        closer = getattr(self.backend, "aclose", None)
        if closer is not None:
            await closer()
        if self.cache is not None:
            self.cache.close()


class _LockedSearcher:
    """Serialises searches on a shared searcher (its SQLite store is shared between threads)."""

    def __init__(self, inner: Any, lock: threading.Lock) -> None:
        self._inner = inner
        self._lock = lock

    def search(self, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return self._inner.search(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _QuestionRuntime(Runtime):
    """A runtime for one (method, question): its own LLM client, the shared everything else."""

    def __init__(self, base: Runtime, llm: Any | None, locks: dict[str, threading.Lock]) -> None:
        self.settings = base.settings
        self.index_paths = base.index_paths
        self._base = base
        self._llm = llm
        self._locks = locks

    def _shared(self, name: str) -> Any:
        # Built once, under a lock: questions run concurrently and may ask at the same moment.
        with self._locks["build"]:
            return getattr(self._base, name)

    @property  # type: ignore[override]
    def llm(self) -> Any | None:
        return self._llm

    @property  # type: ignore[override]
    def embedder(self) -> Any:
        return self._shared("embedder")

    @property  # type: ignore[override]
    def searcher(self) -> Any:
        return _LockedSearcher(self._shared("searcher"), self._locks["search"])

    @cached_property
    def reranker(self) -> Any:
        if self.settings.rerank.backend == "llm":
            # The LLM reranker's calls belong to this question's accounting.
            from biorag.embed.rerank import build_reranker

            return build_reranker(self.settings.rerank, self.embedder, self._llm)
        return self._shared("reranker")

    def accounting(self) -> dict[str, Any]:
        return self._llm.accounting.report() if self._llm is not None else {}

    def close(self) -> None:  # the shared parts are closed by the runner
        pass


# -- configuration -----------------------------------------------------------------------------


def run_config(
    settings: Settings,
    dataset: str,
    data_path: str | Path,
    *,
    split: str | None,
    setting: str | None,
    index_paths: list[Path],
    methods: list[str],
    method_options: dict[str, dict[str, Any]],
    llm_model: str | None = None,
) -> dict[str, Any]:
    """What ``run.json`` records: the keys in ``_COMPARED`` must match on resume."""
    from biorag import __version__
    from biorag.retrieve.index import read_manifest

    indexes = []
    for p in index_paths:
        m = read_manifest(Path(p))
        indexes.append(
            {"name": m.get("name"), "embed_model": m.get("embed_model"), "dim": m.get("dim")}
        )
    shown = masked_dict(settings)
    llm = settings.llm
    return {
        "dataset": dataset,
        "split": split,
        "setting": setting,
        "methods": list(methods),
        "method_options": {m: dict(method_options.get(m) or {}) for m in methods},
        "indexes": indexes,
        "models": {
            "llm_backend": llm.backend,
            "llm_model": llm_model or llm.model,
            "temperature": llm.temperature,
            "max_tokens": llm.max_tokens,
            "embed_model": settings.embed.model,
            "rerank": settings.rerank.model_dump(),
            "retrieval": settings.retrieval.model_dump(),
        },
        # recorded, not compared
        "data_path": str(data_path),
        "index_paths": [str(p) for p in index_paths],
        "llm_base_url": shown["llm"].get("base_url"),
        "biorag_version": __version__,
    }


def config_differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per compared key whose value differs."""
    out = []
    for key in _COMPARED:
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            for sub in sorted(set(a) | set(b)):
                if a.get(sub) != b.get(sub):
                    out.append(f"{key}.{sub}: {a.get(sub)!r} in run.json, now {b.get(sub)!r}")
        else:
            out.append(f"{key}: {a!r} in run.json, now {b!r}")
    return out


def _check_or_write_config(out_dir: Path, config: dict[str, Any], extra: dict[str, Any]) -> None:
    path = out_dir / RUN_FILE
    if path.is_file():
        old = read_json(path)
        diffs = config_differences(old, config)
        if diffs:
            raise BioragError(
                f"{out_dir} holds a run with a different configuration ("
                + "; ".join(diffs)
                + "); use a new --out, or rerun with the recorded settings to resume"
            )
        for key in ("data_path", "biorag_version"):
            if old.get(key) != config.get(key):
                log.warning(
                    "resuming %s: %s was %r, now %r", out_dir, key, old.get(key), config.get(key)
                )
        started = old.get("started_at")
    else:
        started = None
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    write_json_atomic(path, {**config, **extra, "started_at": started or now, "updated_at": now})


# -- one answer --------------------------------------------------------------------------------


def is_multiple_choice(item: QAItem) -> bool:
    return bool(item.options) and isinstance(item.gold, str) and item.gold in item.options


def _record(
    item: QAItem,
    method: str,
    answer: Any | None,
    error: str | None,
    accounting: dict[str, Any],
    seconds: float,
) -> dict[str, Any]:
    mc = is_multiple_choice(item)
    prediction = answer.answer if answer is not None else ""
    parse_failed = bool(answer.parse_failed) if answer is not None else False
    evidence = list(answer.evidence) if answer is not None else []
    documents: list[str] = []
    for e in evidence:
        if e.get("corpus") == "given":  # the question's own passages are no retrieval
            continue
        doc = str(e.get("source_id") or e.get("doc_id") or "")
        if doc and doc not in documents:
            documents.append(doc)
    return {
        "question_id": item.id,
        "method": method,
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
        "evidence": [str(e.get("chunk_id", "")) for e in evidence],
        "documents": documents,
        "notes": list(answer.notes) if answer is not None else [],
        "accounting": {k: accounting.get(k, {}) for k in ("stages", "total")},
        "seconds": round(seconds, 4),
        "error": error,
    }


# -- metrics -----------------------------------------------------------------------------------


def _macro_f1(pairs: list[tuple[str, str]], labels: list[str]) -> float:
    """Macro-F1 over ``labels`` of (gold, prediction) pairs; a non-label prediction is a miss."""
    f1s = []
    for lab in labels:
        tp = sum(1 for g, p in pairs if g == lab and p == lab)
        pred = sum(1 for _, p in pairs if p == lab)
        gold = sum(1 for g, _ in pairs if g == lab)
        prec = tp / pred if pred else 0.0
        rec = tp / gold if gold else 0.0
        f1s.append(2 * prec * rec / (prec + rec) if prec + rec else 0.0)
    return sum(f1s) / len(f1s) if f1s else 0.0


def _mean_accounting(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean calls/tokens per question per stage (and in total) over ``records``."""
    keys = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "failures")
    n = len(records)
    stages: dict[str, dict[str, float]] = {}
    total = dict.fromkeys(keys, 0.0)
    for r in records:
        acc = r.get("accounting") or {}
        for stage, row in (acc.get("stages") or {}).items():
            s = stages.setdefault(stage, dict.fromkeys(keys, 0.0))
            for k in keys:
                s[k] += float(row.get(k, 0) or 0)
        for k in keys:
            total[k] += float((acc.get("total") or {}).get(k, 0) or 0)

    def mean(d: dict[str, float]) -> dict[str, float]:
        return {k: round(v / n, 4) if n else 0.0 for k, v in d.items()}

    return {"stages": {k: mean(v) for k, v in sorted(stages.items())}, "total": mean(total)}


def _scorer() -> Callable[..., dict[str, Any]] | None:
    try:
        from biorag.eval.metrics import score_dataset
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("biorag.eval.metrics"):
            return None
        raise
    return score_dataset


def compute_metrics(
    dataset: str,
    items: list[QAItem],
    records: list[dict[str, Any]],
    methods: list[str],
    scorer: Callable[..., dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Per-method metrics of the latest record of every (method, item) pair.

    ``scores`` is what ``score_dataset`` returned (failed answers are passed as
    ``parse_failed``); its ``accuracy``, ``macro_f1`` and ``per_subset`` (as ``by_subset``) are
    repeated at the top. Without a scorer the runner counts exact option letters itself. Every
    item is in the denominator: unanswered, unparseable, failed and missing ones count as wrong.
    """
    latest = latest_records(records)
    mc = bool(items) and all(is_multiple_choice(it) for it in items)
    subsets = sorted({it.subset for it in items if it.subset})
    out: dict[str, Any] = {}
    for m in methods:
        recs = [latest[(m, it.id)] for it in items if (m, it.id) in latest]
        by_id = {r["question_id"]: r for r in recs}
        errors = sum(1 for r in recs if r.get("error"))
        unparseable = sum(1 for r in recs if not r.get("error") and r.get("parse_failed"))
        entry: dict[str, Any] = {
            "n": len(items),
            "answered": len(recs) - errors - unparseable,
            "unparseable": unparseable,
            "errors": errors,
            "missing": len(items) - len(recs),
        }
        preds: dict[str, dict[str, Any]] = {}
        for r in recs:
            pred: dict[str, Any] = {
                "prediction": r.get("prediction") or "",
                "parse_failed": bool(r.get("parse_failed") or r.get("error")),
            }
            if r.get("documents"):
                pred["documents"] = r["documents"]
            preds[r["question_id"]] = pred
        scores: dict[str, Any] | None = None
        if scorer is not None:
            try:
                scores = scorer(dataset, items, preds)
            except Exception as e:  # a scoring bug must not lose hours of answers
                log.warning("scoring %s for %s failed: %s", dataset, m, e)
                entry["scores_error"] = f"{type(e).__name__}: {e}"
        if scores is not None and "accuracy" in scores:
            entry["accuracy"] = scores["accuracy"]
            if "macro_f1" in scores:
                entry["macro_f1"] = scores["macro_f1"]
            if scores.get("per_subset"):
                entry["by_subset"] = scores["per_subset"]
        elif mc:  # no scorer: the runner's own count of exact letters
            entry["accuracy"] = round(sum(1 for r in recs if r.get("correct")) / len(items), 6)
            labels = sorted({str(it.gold) for it in items})
            pairs = [
                (str(it.gold), str(by_id.get(it.id, {}).get("prediction") or "")) for it in items
            ]
            entry["macro_f1"] = round(_macro_f1(pairs, labels), 6)
            if subsets:
                entry["by_subset"] = {}
                for s in subsets:
                    its = [it for it in items if it.subset == s]
                    ok = sum(1 for it in its if by_id.get(it.id, {}).get("correct"))
                    entry["by_subset"][s] = {"n": len(its), "accuracy": round(ok / len(its), 6)}
        if scores is not None:
            entry["scores"] = scores
        entry["accounting_per_question"] = _mean_accounting(recs)
        secs = [float(r.get("seconds") or 0.0) for r in recs]
        entry["seconds_total"] = round(sum(secs), 3)
        entry["seconds_per_question"] = round(sum(secs) / len(secs), 4) if secs else 0.0
        out[m] = entry
    return out


# -- the run -----------------------------------------------------------------------------------


def _load_items(
    loader: Callable[..., Any] | None,
    dataset: str,
    data_path: str | Path,
    split: str | None,
    setting: str | None,
    limit: int | None,
) -> Any:
    if loader is None:
        from biorag.eval.datasets import load_dataset as loader
    return loader(dataset, Path(data_path), split=split, setting=setting, limit=limit)


def run_eval(
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
) -> EvalSummary:
    """Answer every (method, question) not yet in ``out_dir`` and score the whole run.

    ``retry_errors``: pairs whose latest record is an error are answered again on resume.
    ``runtime`` (a base :class:`Runtime` whose embedder/searcher/reranker are shared),
    ``backend`` (an LLM backend replacing the configured one) and ``loader`` (replacing
    ``biorag.eval.datasets.load_dataset``) exist for tests and scripts. After
    ``max_consecutive_errors`` failed answers in a row the run stops with an error (a server is
    down, say); the answers so far are kept and the same command resumes.
    """
    return asyncio.run(
        arun_eval(
            settings,
            dataset,
            data_path,
            split=split,
            setting=setting,
            index_paths=index_paths,
            methods=methods,
            method_options=method_options,
            out_dir=out_dir,
            limit=limit,
            concurrency=concurrency,
            retry_errors=retry_errors,
            runtime=runtime,
            backend=backend,
            loader=loader,
            max_consecutive_errors=max_consecutive_errors,
        )
    )


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
) -> EvalSummary:
    """:func:`run_eval` for code already inside an event loop."""
    from biorag.methods.registry import build_method
    from biorag.util.progress import progress_bar

    out = Path(out_dir)
    if loader is None:
        from biorag.eval.datasets import canonical_name

        dataset = canonical_name(dataset)
    index_paths = [Path(p) for p in (index_paths or [])]
    method_options = dict(method_options or {})
    if not methods:
        raise BioragError("no methods given; pass --methods m1,m2")
    if len(set(methods)) != len(methods):
        raise BioragError(f"--methods lists a method twice: {','.join(methods)}")
    unknown = sorted(set(method_options) - set(methods))
    if unknown:
        raise BioragError(
            f"--method-options names method(s) {unknown} that are not in --methods "
            f"({','.join(methods)}); key the JSON by method name"
        )
    if concurrency < 1:
        raise BioragError("--concurrency must be at least 1")
    if limit is not None and limit < 1:
        raise BioragError("--limit must be at least 1")

    loaded = _load_items(loader, dataset, data_path, split, setting, limit)
    items: list[QAItem] = list(loaded.items)
    skipped = list(getattr(loaded, "skipped", []) or [])
    if skipped:
        log.warning("%s: %d record(s) skipped while loading", dataset, len(skipped))
    if not items:
        raise BioragError(f"{dataset} at {data_path} gave no questions (split={split!r})")
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        raise BioragError(f"{dataset}: question ids are not unique; the runner keys on them")

    shared = _SharedLLM(settings, backend)
    base = runtime if runtime is not None else Runtime(settings, index_paths)
    try:
        for m in methods:  # unknown methods and bad options fail before anything is answered
            qa = build_method(m, base, method_options.get(m))
            if qa.needs_index and not index_paths and any(not it.context for it in items):
                raise BioragError(
                    f"method {m!r} retrieves evidence: pass --index DIR (one per corpus), or a "
                    "setting whose questions carry their own context"
                )
        config = run_config(
            settings,
            dataset,
            data_path,
            split=split,
            setting=setting,
            index_paths=index_paths,
            methods=methods,
            method_options=method_options,
            llm_model=shared.model,
        )
        out.mkdir(parents=True, exist_ok=True)
        _check_or_write_config(
            out,
            config,
            {
                "limit": limit,
                "n_items": len(items),
                "skipped_records": len(skipped),
                "dataset_info": dict(getattr(loaded, "info", {}) or {}),
            },
        )
        records = read_predictions(out / PREDICTIONS_FILE, repair=True)
        latest = latest_records(records)
        done = {key for key, r in latest.items() if not (retry_errors and r.get("error"))}
        pending = [(m, it) for it in items for m in methods if (m, it.id) not in done]
        summary = EvalSummary(
            out_dir=out,
            metrics={},
            n_items=len(items),
            already_done=len(items) * len(methods) - len(pending),
            skipped_records=len(skipped),
        )
        if pending:
            await _answer_all(
                pending,
                base,
                shared,
                method_options,
                out / PREDICTIONS_FILE,
                concurrency,
                max_consecutive_errors,
                summary,
                progress_bar(len(pending), f"eval {dataset}", unit="answer"),
            )
    finally:
        await shared.aclose()
        if runtime is None:
            base.close()

    records = read_predictions(out / PREDICTIONS_FILE)
    per_method = compute_metrics(dataset, items, records, methods, _scorer())
    metrics = {
        "dataset": dataset,
        "split": split,
        "setting": setting,
        "n_items": len(items),
        "subsets": sorted({it.subset for it in items if it.subset}),
        "parts": sorted({str(it.meta["part"]) for it in items if "part" in it.meta}),
        "methods": per_method,
    }
    if _scorer() is None:
        metrics["note"] = "biorag.eval.metrics is not installed: dataset scores not computed"
    write_json_atomic(out / METRICS_FILE, metrics)
    summary.metrics = metrics
    return summary


async def _answer_all(
    pending: list[tuple[str, QAItem]],
    base: Runtime,
    shared: _SharedLLM,
    method_options: dict[str, dict[str, Any]],
    path: Path,
    concurrency: int,
    max_consecutive_errors: int,
    summary: EvalSummary,
    bar: Any,
) -> None:
    from biorag.llm.accounting import Accounting
    from biorag.methods.base import Question
    from biorag.methods.registry import build_method

    locks = {"build": threading.Lock(), "search": threading.Lock()}
    queue = iter(pending)
    state = {"consecutive": 0, "last_error": "", "stop": False}

    async def answer_one(method: str, item: QAItem) -> dict[str, Any]:
        acc = Accounting()
        rt = _QuestionRuntime(base, shared.client(acc), locks)
        start = time.perf_counter()
        answer, error = None, None
        try:
            qa = build_method(method, rt, method_options.get(method))
            answer = await qa.answer(
                Question(
                    id=item.id,
                    text=item.question,
                    options=item.options,
                    passages=list(item.context),
                )
            )
        except Exception as e:  # recorded and counted, never lost; CancelledError passes
            error = f"{type(e).__name__}: {e}"
            log.debug("%s on %s failed", method, item.id, exc_info=True)
        return _record(item, method, answer, error, acc.report(), time.perf_counter() - start)

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
