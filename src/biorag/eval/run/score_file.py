"""``biorag eval score``: a predictions file scored on a benchmark's questions without
answering anything (:func:`score_predictions_file`).

The questions are the dataset's under the split, setting and limit given. A run directory's
``predictions.jsonl`` (a ``run.json`` beside it; the directory itself names it too) is scored on
exactly the run's questions: its split, setting and limit are read from ``run.json`` (one given
that differs is refused), and the questions its knowledge-graph guard left out
(``--exclude-overlap``) are left out again (:mod:`.questions`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from biorag.corpus.datasets import canonical_name
from biorag.errors import BioragError
from biorag.eval.metrics import score_dataset
from biorag.eval.metrics.official import check_scoring
from biorag.eval.run.predictions_file import read_predictions_file
from biorag.eval.run.questions import RunScope, load_questions, read_run_scope, run_questions
from biorag.eval.run.records import PREDICTIONS_FILE, RUN_FILE
from biorag.eval.run.scoring import prediction_entry

__all__ = ["score_predictions_file"]


def score_predictions_file(
    dataset: str,
    data: str | Path,
    predictions: str | Path,
    *,
    split: str | None = None,
    setting: str | None = None,
    limit: int | None = None,
    method: str | None = None,
    scoring: str = "official",
) -> dict[str, Any]:
    """The scores of every method of ``predictions`` (``methods``: method -> what
    :func:`~biorag.eval.metrics.score_dataset` returns), with what was scored: dataset, data,
    split, setting, limit, scoring, the file and its shape, the number of questions and, for a
    run directory's file, the run and how many questions it left out."""
    check_scoring(scoring)
    if not Path(data).exists():
        raise BioragError(f"dataset file or folder {data} does not exist", param="data")
    if limit is not None and limit < 1:
        raise BioragError("limit must be at least 1", param="limit")
    name = canonical_name(dataset)
    path = Path(predictions)
    if path.is_dir() and (path / RUN_FILE).is_file():
        path = path / PREDICTIONS_FILE
    scope = read_run_scope(path.parent) if (path.parent / RUN_FILE).is_file() else None
    if scope is not None:
        _same_dataset(scope, name)
        split = _the_runs("split", split, scope.split, scope)
        setting = _the_runs("setting", setting, scope.setting, scope)
        limit = _the_runs("limit", limit, scope.limit, scope)
    _, items, _ = load_questions(None, name, data, split, setting, limit)
    if scope is not None:
        items = run_questions(scope, items, data)
    read = read_predictions_file(path, items, method=method)
    scores = {}
    for m in read.methods:
        preds = {r["question_id"]: prediction_entry(r) for r in read.records if r["method"] == m}
        scores[m] = score_dataset(name, items, preds, scoring=scoring)
    return {
        "dataset": name,
        "data": str(data),
        "split": split,
        "setting": setting,
        "limit": limit,
        "scoring": scoring,
        "predictions": str(path),
        "shape": read.shape,
        "n_items": len(items),
        "run": str(scope.run_dir) if scope is not None else None,
        "excluded": len(scope.excluded) if scope is not None else 0,
        "methods": scores,
    }


def _same_dataset(scope: RunScope, name: str) -> None:
    recorded = str(scope.dataset or "").strip().lower().replace("-", "").replace("_", "")
    if recorded and recorded != name:
        raise BioragError(
            f"{scope.run_dir} is a run on {scope.dataset}, not {name}; name the run's dataset",
            param="dataset",
        )


def _the_runs(key: str, given: Any, recorded: Any, scope: RunScope) -> Any:
    """The run's ``key`` (split, setting, limit): ``given`` must be it or left out."""
    if given is not None and given != recorded:
        raise BioragError(
            f"{scope.run_dir} was run with {key} {recorded!r}, not {given!r}; leave it out to "
            "score the run's questions, or give the run's",
            param=key,
        )
    return recorded
