"""An evaluation's questions: loaded and checked (:func:`load_questions`), and a run
directory's own (:func:`read_run_scope`, :func:`run_questions`): its dataset's questions under
``run.json``'s split, setting and limit, less those its knowledge-graph guard left out
(``--exclude-overlap``; their ids are in ``run.json``'s ``overlap_excluded``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biorag.corpus.datasets import load_dataset
from biorag.corpus.datasets.base import QAItem
from biorag.corpus.models import SkippedRecord
from biorag.errors import BioragError
from biorag.eval.run.records import METRICS_FILE, RUN_FILE, read_json

__all__ = ["EXCLUDED_KEY", "RunScope", "load_questions", "read_run_scope", "run_questions"]

log = logging.getLogger("biorag.eval")

#: run.json's list of the question ids the knowledge-graph guard left out of the run
EXCLUDED_KEY = "overlap_excluded"


def load_questions(
    loader: Callable[..., Any] | None,
    dataset: str,
    data_path: str | Path,
    split: str | None,
    setting: str | None,
    limit: int | None,
) -> tuple[Any, list[QAItem], list[SkippedRecord]]:
    """``(what the loader returned, its questions, the records it skipped)``; refuses a dataset
    that gave no question or repeats an id."""
    if loader is None:
        loader = load_dataset
    loaded = loader(dataset, Path(data_path), split=split, setting=setting, limit=limit)
    items: list[QAItem] = list(loaded.items)
    skipped = list(getattr(loaded, "skipped", []) or [])
    if skipped:
        log.warning("%s: %d record(s) skipped while loading", dataset, len(skipped))
    if not items:
        raise BioragError(f"{dataset} at {data_path} gave no questions (split={split!r})")
    ids = [it.id for it in items]
    if len(set(ids)) != len(ids):
        raise BioragError(f"{dataset}: question ids are not unique; the runner keys on them")
    return loaded, items, skipped


@dataclass
class RunScope:
    """Which questions a run directory answered: what ``run.json`` says of them."""

    run_dir: Path
    dataset: str | None
    split: str | None
    setting: str | None
    limit: int | None
    n_items: int | None
    excluded: list[str] = field(default_factory=list)


def read_run_scope(run_dir: str | Path) -> RunScope:
    """The scope of the run in ``run_dir`` (its ``run.json``; the ids the knowledge-graph
    guard left out, from ``metrics.json`` for a run recorded before ``run.json`` kept them)."""
    run_dir = Path(run_dir)
    cfg = read_json(run_dir / RUN_FILE)
    excluded = cfg.get(EXCLUDED_KEY)
    if not isinstance(excluded, list):
        excluded = _excluded_from_metrics(run_dir)
    limit = cfg.get("limit")
    return RunScope(
        run_dir=run_dir,
        dataset=cfg.get("dataset"),
        split=cfg.get("split"),
        setting=cfg.get("setting"),
        limit=int(limit) if limit is not None else None,
        n_items=cfg.get("n_items"),
        excluded=[str(q) for q in excluded],
    )


def _excluded_from_metrics(run_dir: Path) -> list[str]:
    """The overlapping ids an older run's ``metrics.json`` shows (it shows the first few):
    all of them, or a :class:`BioragError` saying how to record the rest."""
    path = run_dir / METRICS_FILE
    block = (read_json(path) if path.is_file() else {}).get("kg_overlap") or {}
    n = int(block.get("overlapping") or 0)
    if block.get("policy") != "exclude" or not n:
        return []
    shown = [str(q) for q in block.get("examples") or []]
    if len(shown) >= n:
        return shown
    raise BioragError(
        f"{run_dir}: the run left out {n} questions that went into a knowledge graph but "
        f"recorded the ids of only {len(shown)}; resume the run (its own command) with this "
        "biorag to record them, then score it"
    )


def run_questions(scope: RunScope, items: list[QAItem], data_path: str | Path) -> list[QAItem]:
    """``items`` (loaded under the run's split, setting and limit) less those the run left
    out; refuses data that does not give the run's number of questions."""
    excluded = set(scope.excluded)
    kept = [it for it in items if it.id not in excluded]
    if scope.n_items is not None and len(kept) != scope.n_items:
        left = f" (less {len(items) - len(kept)} the run left out)" if excluded else ""
        raise BioragError(
            f"{data_path} gave {len(kept)} questions{left} but the run in {scope.run_dir} had "
            f"{scope.n_items}; give the data the run was made from",
            param="data",
        )
    return kept
