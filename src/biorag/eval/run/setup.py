"""The steps before an evaluation answers anything: its arguments checked, its questions loaded
(:mod:`.questions`), its methods built (so a bad option fails first), its questions masked when
asked, and its run directory locked and described in ``run.json``.
:func:`biorag.eval.run.runner.arun_eval` calls them in this order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from biorag.config import Settings
from biorag.corpus.audit import summarize_skips
from biorag.corpus.datasets.base import QAItem
from biorag.corpus.models import SkippedRecord
from biorag.errors import BioragError
from biorag.eval.metrics.official import check_scoring
from biorag.eval.run.config import check_or_write_run_config, run_config
from biorag.eval.run.masking import mask_items
from biorag.eval.run.questions import EXCLUDED_KEY
from biorag.eval.run.questions import load_questions as load_questions
from biorag.eval.run.records import RunDirLock
from biorag.llm.accounting import Accounting
from biorag.llm.shared import SharedLLM
from biorag.methods.registry import build_method
from biorag.runtime import Runtime


def check_arguments(
    methods: list[str],
    method_options: dict[str, dict[str, Any]],
    concurrency: int,
    scoring: str,
    limit: int | None,
) -> None:
    """Refuse a run that cannot be what was meant, before anything is loaded."""
    if not methods:
        raise BioragError("no methods given: name one or more", param="methods")
    if len(set(methods)) != len(methods):
        raise BioragError(f"methods lists a method twice: {','.join(methods)}", param="methods")
    unknown = sorted(set(method_options) - set(methods))
    if unknown:
        raise BioragError(
            f"method options name method(s) {unknown} that are not among the methods "
            f"({','.join(methods)}); key them by method name",
            param="method_options",
        )
    if concurrency < 1:
        raise BioragError("concurrency must be at least 1", param="concurrency")
    check_scoring(scoring)
    if limit is not None and limit < 1:
        raise BioragError("limit must be at least 1", param="limit")


def build_methods(
    methods: list[str],
    base: Runtime,
    method_options: dict[str, dict[str, Any]],
    index_paths: list[Path],
    items: list[QAItem],
) -> tuple[dict[str, dict[str, Any]], list[Path]]:
    """Build every method once (unknown methods and bad options fail before anything is
    answered): ``(each method's effective options, the KG directories they read)``."""
    effective: dict[str, dict[str, Any]] = {}
    kg_dirs: list[Path] = []
    for m in methods:
        qa = build_method(m, base, method_options.get(m))
        effective[m] = dict(qa.options)
        kg_dir = getattr(qa, "kg_dir", None)
        if callable(kg_dir):
            kg_dirs.append(kg_dir())
        if qa.needs_index and not index_paths and any(not it.context for it in items):
            raise BioragError(
                f"method {m!r} retrieves evidence: give an index directory (one per corpus), or "
                "a setting whose questions carry their own context",
                param="index",
            )
    return effective, kg_dirs


async def mask_questions(
    items: list[QAItem], shared: SharedLLM
) -> tuple[list[QAItem], dict[str, Any]]:
    """The questions with their entities masked (CLAIMS table 4), and the masking's counts and
    LLM use."""
    acc = Accounting()
    masked, stats = await mask_items(items, shared.client(acc))
    stats["accounting"] = acc.report()["total"]
    return masked, stats


def claim_run_dir(
    out: Path,
    settings: Settings,
    shared: SharedLLM,
    run: dict[str, Any],
    items: list[QAItem],
    skipped: list[SkippedRecord],
    loaded: Any,
) -> RunDirLock:
    """Lock ``out`` (a second run into it is refused before it touches anything), then check
    ``run.json`` against this run (a resume must match) or write it. ``run`` holds the
    arguments :func:`~biorag.eval.run.config.run_config` records, plus ``limit``,
    ``mask_entities``, ``overlap_excluded`` (the ids the knowledge-graph guard left out) and
    ``source_docs`` (the policy; None without an index or where it
    changes nothing for ``items``: :func:`~biorag.eval.run.source_docs.policy_effect`). The
    caller releases the lock."""
    lock = RunDirLock(out)
    try:
        config = run_config(
            settings,
            run["dataset"],
            run["data_path"],
            split=run["split"],
            setting=run["setting"],
            index_paths=run["index_paths"],
            methods=run["methods"],
            method_options=run["method_options"],
            llm_model=shared.model,
            effective_options=run["effective"],
        )
        config["mask_entities"] = run["mask_entities"]
        config["source_docs"] = run["source_docs"]
        extra = {
            "limit": run["limit"],
            EXCLUDED_KEY: list(run.get("overlap_excluded") or []),
            "n_items": len(items),
            "skipped_records": len(skipped),
            "skipped_by_kind": summarize_skips(skipped).by_kind,
            "dataset_info": dict(getattr(loaded, "info", {}) or {}),
        }
        check_or_write_run_config(out, config, extra, items)
    except BaseException:
        lock.release()
        raise
    return lock
