"""``biorag eval score``: a predictions file scored against a benchmark without answering
(registered on ``biorag eval``'s app by :mod:`.eval_cmd`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from biorag.cli.common import emit_json, handle_errors
from biorag.errors import BioragError


@handle_errors
def score(
    dataset: str = typer.Option(..., "--dataset", help="benchmark name (pubmedqa, bioasq, ...)"),
    data: Path = typer.Option(..., "--data", help="the dataset file or folder"),
    split: str = typer.Option(None, "--split", help="e.g. test (PubMedQA's 500 test questions)"),
    predictions: Path = typer.Option(
        ...,
        "--predictions",
        help="biorag's predictions.jsonl, a JSON {question_id: prediction} (PubMedQA's "
        '{pmid: "yes"|"no"|"maybe"}) or a BioASQ submission {"questions": [...]}',
    ),
    method: str = typer.Option(
        None,
        "--method",
        help="only this method's records (predictions.jsonl), or the name of a submission "
        "(default: the file's name)",
    ),
    scoring: str = typer.Option(
        "official",
        "--scoring",
        help="official (each benchmark's own evaluator) | biorag (biorag's variants)",
    ),
    as_json: bool = typer.Option(False, "--json", help="print the scores as JSON"),
) -> None:
    """Score a predictions file against a benchmark without answering anything.

    Every question of --data (and --split) needs one prediction per method; a missing,
    repeated or unknown question id is an error naming it, and nothing is scored.
    """
    # lazy: the dataset loaders and the measures, only for this command
    from biorag.corpus.datasets import canonical_name, load_dataset
    from biorag.eval.metrics import score_dataset
    from biorag.eval.metrics.official import check_scoring
    from biorag.eval.run.predictions_file import read_predictions_file
    from biorag.eval.run.scoring import prediction_entry

    check_scoring(scoring)
    if not Path(data).exists():
        raise BioragError(f"--data {data} does not exist")
    name = canonical_name(dataset)
    items = list(load_dataset(name, Path(data), split=split).items)
    if not items:
        raise BioragError(f"{dataset} at {data} gave no questions (split={split!r})")
    read = read_predictions_file(predictions, items, method=method)
    scores = {}
    for m in read.methods:
        preds = {r["question_id"]: prediction_entry(r) for r in read.records if r["method"] == m}
        scores[m] = score_dataset(name, items, preds, scoring=scoring)
    if as_json:
        emit_json({"dataset": name, "data": str(data), "split": split, "scoring": scoring,
                   "predictions": str(predictions), "shape": read.shape, "n_items": len(items),
                   "methods": scores})  # fmt: skip
        return
    typer.echo(f"{predictions}: {len(items)} questions of {name}, scoring {scoring}", err=True)
    for m, s in scores.items():
        typer.echo(m)
        for key, value in _measures(s):
            typer.echo(f"  {key:34s} {value}")


def _measures(scores: dict[str, Any], prefix: str = "") -> list[tuple[str, str]]:
    """Every number of a scores block as (dotted name, value to 6 decimals)."""
    out: list[tuple[str, str]] = []
    for key, value in scores.items():
        if isinstance(value, dict):
            out += _measures(value, f"{prefix}{key}.")
        elif isinstance(value, int | float) and not isinstance(value, bool):
            shown = str(value) if isinstance(value, int) else f"{value:.6f}"
            out.append((prefix + key, shown))
    return out
