"""Per-method metrics of an evaluation run, from its prediction records (``metrics.json``).

:func:`compute_metrics` takes the latest record of every (method, question) pair and reports
per method: answered/unparseable/failed/missing counts, the dataset's scores (from
``biorag.eval.metrics.score_dataset`` when installed, see :func:`dataset_scorer`; else the
runner's own count of exact option letters, accuracy and macro-F1), the mean LLM calls and
tokens per question per stage, and the time spent. :func:`judged_blocks` reports each method's
five-point judged answer score from ``judgments.jsonl`` (:mod:`biorag.eval.judging.judge_run`)
over the questions with an :func:`ideal_answer`. :func:`run_metrics` wraps them into
``metrics.json``, which records the scoring, the commit of biorag's source that scored it
(:func:`source_commit`) and the command that wrote it.
"""

from __future__ import annotations

import functools
import logging
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path
from typing import Any

from biorag.corpus.datasets.base import QAItem
from biorag.eval.judging import five_point
from biorag.eval.run.records import answer_sha256, judged_text, judgment_key, latest_records
from biorag.llm.accounting import StageStats
from biorag.util.secrets import mask_argv
from biorag.verify.support import citation_quality

log = logging.getLogger("biorag.eval")

_ACCOUNTING_KEYS = (
    "calls",
    "cache_hits",
    "prompt_tokens",
    "completion_tokens",
    "latency_s",
    "failures",
)
#: The counters summed and averaged per stage: those of :class:`~biorag.llm.accounting.StageStats`.
STAGE_KEYS = tuple(f.name for f in fields(StageStats))


def is_multiple_choice(item: QAItem) -> bool:
    """True when the gold answer is one of the item's options (scored by exact option)."""
    return bool(item.options) and isinstance(item.gold, str) and item.gold in item.options


def ideal_answer(item: QAItem) -> str | None:
    """The ideal answer a judge compares answers with, or None when the item has none."""
    ideals = item.meta.get("ideal_answer")
    if isinstance(ideals, str):
        ideals = [ideals]
    if isinstance(ideals, list):
        for text in ideals:
            if isinstance(text, str) and text.strip():
                return text.strip()
    if item.question_type in ("summary", "free") and isinstance(item.gold, str):
        return item.gold.strip() or None
    return None


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


def _number(value: Any) -> float:
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0


def sum_accounting(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Calls, cache hits, tokens, latency and failures per stage (and in total), summed over
    the ``accounting`` of ``records`` (counts as integers, ``latency_s`` in seconds)."""
    stages: dict[str, dict[str, float]] = {}
    total = dict.fromkeys(STAGE_KEYS, 0.0)
    for r in records:
        acc = r.get("accounting") or {}
        for stage, row in (acc.get("stages") or {}).items():
            s = stages.setdefault(stage, dict.fromkeys(STAGE_KEYS, 0.0))
            for k in STAGE_KEYS:
                s[k] += _number(row.get(k))
        for k in STAGE_KEYS:
            total[k] += _number((acc.get("total") or {}).get(k))

    def typed(d: dict[str, float]) -> dict[str, Any]:
        return {k: round(v, 4) if k == "latency_s" else int(v) for k, v in d.items()}

    return {"stages": {k: typed(v) for k, v in sorted(stages.items())}, "total": typed(total)}


def _mean_accounting(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean calls, cache hits, tokens, latency and failures per question per stage (and in
    total) over ``records``."""
    n = len(records)
    sums = sum_accounting(records)

    def mean(d: dict[str, Any]) -> dict[str, float]:
        return {k: round(v / n, 4) if n else 0.0 for k, v in d.items()}

    return {
        "stages": {k: mean(v) for k, v in sums["stages"].items()},
        "total": mean(sums["total"]),
    }


def judged_blocks(
    items: list[QAItem],
    records: list[dict[str, Any]],
    judgments: list[dict[str, Any]],
    methods: list[str],
    model_id: str | None,
    note: str | None = None,
    prompt: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Each method's ``judged`` block of ``metrics.json``.

    Not judged (``model_id`` None): ``{"note": why, "eligible": questions with an ideal answer}``.
    Judgments count when made by ``model_id`` with the judge prompt version ``prompt`` (default:
    the current prompt).

    Over the questions with an ideal answer (``eligible``): ``n`` scored answers, their
    ``mean`` and ``distribution`` (``"1"``..``"5"``); ``unscored`` = ``failed`` (no stored
    judgment: the call failed or was not made; judged on the next run) + ``unusable`` (the
    judge gave no 1..5 score); ``no_answer`` = questions whose latest answer failed or is
    missing. ``eligible = n + unscored + no_answer``. ``accounting``: the judge's calls and
    tokens for the judgments counted.
    """
    version = five_point.prompt_version() if prompt is None else prompt
    eligible = [it for it in items if ideal_answer(it) is not None]
    if model_id is None:
        return {m: {"note": note or "not judged", "eligible": len(eligible)} for m in methods}
    latest = latest_records(records)
    by_key = {judgment_key(j): j for j in judgments}
    out: dict[str, dict[str, Any]] = {}
    for m in methods:
        scores: list[int] = []
        failed = unusable = no_answer = 0
        acc: dict[str, Any] = dict.fromkeys(_ACCOUNTING_KEYS, 0)
        for it in eligible:
            rec = latest.get((m, it.id))
            if rec is None or rec.get("error"):
                no_answer += 1
                continue
            key = (m, it.id, answer_sha256(judged_text(rec)), model_id, version)
            j = by_key.get(key)
            if j is None:
                failed += 1
                continue
            total = (j.get("accounting") or {}).get("total") or {}
            for k in _ACCOUNTING_KEYS:
                if k == "latency_s":
                    acc[k] = round(acc[k] + _number(total.get(k)), 4)
                else:
                    acc[k] += int(_number(total.get(k)))
            s = j.get("score")
            if isinstance(s, int) and not isinstance(s, bool) and 1 <= s <= 5:
                scores.append(s)
            else:
                unusable += 1
        block: dict[str, Any] = {
            "mean": round(sum(scores) / len(scores), 4) if scores else None,
            "n": len(scores),
            "unscored": failed + unusable,
            "failed": failed,
            "unusable": unusable,
            "no_answer": no_answer,
            "eligible": len(eligible),
            "distribution": {str(k): scores.count(k) for k in range(1, 6)},
            "judge_model": model_id,
            "accounting": acc,
        }
        if note:
            block["note"] = note
        out[m] = block
    return out


def dataset_scorer() -> Callable[..., dict[str, Any]] | None:
    """``biorag.eval.metrics.score_dataset``, or None when that package is not installed."""
    try:  # lazy: the metrics package may be left out of an install (its absence is the None)
        from biorag.eval.metrics import score_dataset
    except ModuleNotFoundError as e:
        if e.name and e.name.startswith("biorag.eval.metrics"):
            return None
        raise
    return score_dataset


def prediction_entry(record: dict[str, Any]) -> dict[str, Any]:
    """What ``score_dataset`` reads of a prediction record (a failed answer is
    ``parse_failed``)."""
    pred: dict[str, Any] = {
        "prediction": record.get("prediction") or "",
        "parse_failed": bool(record.get("parse_failed") or record.get("error")),
    }
    if record.get("documents"):
        pred["documents"] = record["documents"]
    if record.get("sentences"):  # a span question's predicted sentences (MASH-QA)
        pred["sentences"] = record["sentences"]
    if "snippets" in record:  # BioASQ over an index: the snippet measures
        pred["snippets"] = record["snippets"]
    if record.get("raw_output"):  # official MIRAGE scoring reads it (locate_answer)
        pred["raw_output"] = record["raw_output"]
    return pred


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
        preds = {r["question_id"]: prediction_entry(r) for r in recs}
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
        if not mc:
            cited = [x for r in recs if not r.get("error") for x in r.get("cited_sentences") or []]
            try:  # as with the scores: a bad record must not lose the run's metrics
                if cited:
                    entry["citations"] = citation_quality(cited)
                    kinds = [(r.get("verification") or {}).get("verifier") for r in recs]
                    entry["citations"]["verifiers"] = {
                        k: kinds.count(k) for k in sorted({k for k in kinds if k})
                    }
            except Exception as e:
                log.warning("citation quality for %s failed: %s", m, e)
                entry["citations_error"] = f"{type(e).__name__}: {e}"
        entry["accounting_per_question"] = _mean_accounting(recs)
        entry["accounting_total"] = sum_accounting(recs)
        secs = [float(r.get("seconds") or 0.0) for r in recs]
        entry["seconds_total"] = round(sum(secs), 3)
        entry["seconds_per_question"] = round(sum(secs) / len(secs), 4) if secs else 0.0
        out[m] = entry
    return out


def run_metrics(
    dataset: str,
    split: str | None,
    setting: str | None,
    items: list[QAItem],
    records: list[dict[str, Any]],
    methods: list[str],
    judged: dict[str, dict[str, Any]] | None = None,
    wall_s: float | None = None,
    scoring: str = "official",
) -> dict[str, Any]:
    """The whole ``metrics.json`` of a run: its identity and :func:`compute_metrics` per method.

    ``judged`` (per method) is stored as each method's ``judged`` block. ``accounting`` holds
    the answering LLM use of every method's latest records summed per stage, and ``wall_s``:
    the wall-clock seconds of the command that wrote the file (this invocation; a resumed run
    counts only its own part; each record has its own ``seconds``). ``scoring``, ``commit``
    (:func:`source_commit`) and ``command`` say how, from which source and by which command the
    file was written: a resumed run records the later (``biorag eval judge`` keeps the run's
    and adds its own as ``judged_by``).
    """
    scorer = dataset_scorer()
    if scorer is not None:
        scorer = functools.partial(scorer, scoring=scoring)
    per_method = compute_metrics(dataset, items, records, methods, scorer)
    for m, block in (judged or {}).items():
        if m in per_method:
            per_method[m]["judged"] = block
    metrics: dict[str, Any] = {
        "dataset": dataset,
        "split": split,
        "setting": setting,
        "n_items": len(items),
        "scoring": scoring,
        "commit": source_commit(),
        "command": command_line(),
        "subsets": sorted({it.subset for it in items if it.subset}),
        "parts": sorted({str(it.meta["part"]) for it in items if "part" in it.meta}),
        "methods": per_method,
        "accounting": {
            **sum_accounting([{"accounting": e["accounting_total"]} for e in per_method.values()]),
            "wall_s": round(wall_s, 4) if wall_s is not None else None,
        },
    }
    if scorer is None:
        metrics["note"] = "biorag.eval.metrics is not installed: dataset scores not computed"
    return metrics


@functools.cache
def source_commit() -> str | None:
    """The short commit of the git checkout biorag runs from, ``-dirty`` appended when its
    ``src/biorag`` differs from that commit (a changed file, or an untracked one git does not
    ignore); None outside a checkout that tracks biorag's source (an installed wheel, even one
    inside another repository) or without git."""
    src = Path(__file__).resolve().parents[2]  # .../src/biorag

    def git(*args: str) -> str | None:
        try:
            r = subprocess.run(["git", *args], cwd=src, capture_output=True, text=True,
                               timeout=10, check=False)  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            return None
        return r.stdout.strip() if r.returncode == 0 else None

    commit = git("rev-parse", "--short", "HEAD")
    if not commit or not git("ls-files", "--", "__init__.py"):  # not biorag's own checkout
        return None
    changed = git("status", "--porcelain", "--untracked-files=normal", "--", ".")
    return f"{commit}-dirty" if changed else commit


def command_line() -> str | None:
    """The command of this process as typed (``biorag eval ...``), its credentials masked
    (:func:`~biorag.util.secrets.mask_argv`: a URL's ``user:password@``, a secret option's
    value); None without one."""
    if not sys.argv or not sys.argv[0]:
        return None
    return shlex.join([Path(sys.argv[0]).name, *mask_argv(sys.argv[1:])])
