"""``biorag eval score``: a predictions file scored against a benchmark without answering
(registered on ``biorag eval``'s app by :mod:`.eval_cmd`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from biorag.cli.common import emit_json, handle_errors


@handle_errors
def score(
    dataset: str = typer.Option(..., "--dataset", help="benchmark name (pubmedqa, bioasq, ...)"),
    data: Path = typer.Option(..., "--data", help="the dataset file or folder"),
    split: str = typer.Option(
        None, "--split", help="e.g. test (PubMedQA's 500 test questions); a run's: its own"
    ),
    setting: str = typer.Option(
        None, "--setting", help="the loader's setting (a run's: its own), e.g. open"
    ),
    limit: int = typer.Option(
        None, "--limit", help="only the first N questions (a run's: its own --limit)"
    ),
    predictions: Path = typer.Option(
        ...,
        "--predictions",
        help="biorag's predictions.jsonl (a run directory's: scored on the run's questions), a "
        'JSON {question_id: prediction} (PubMedQA\'s {pmid: "yes"|"no"|"maybe"}) or a BioASQ '
        'submission {"questions": [...]}',
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

    Every question of --data (with --split, --setting and --limit) needs one prediction per
    method; a missing, repeated or unknown question id is an error naming it, and nothing is
    scored. A run directory's predictions.jsonl is scored on the run's questions: its split,
    setting and limit, less the questions it left out (--exclude-overlap).
    """
    # lazy: the dataset loaders and the measures, only for this command
    from biorag.eval.run.score_file import score_predictions_file

    out = score_predictions_file(dataset, data, predictions, split=split, setting=setting,
                                 limit=limit, method=method, scoring=scoring)  # fmt: skip
    if as_json:
        emit_json(out)
        return
    run = ""
    if out["run"] is not None:
        run = f" (the run's; {out['excluded']} it left out)" if out["excluded"] else " (the run's)"
    typer.echo(
        f"{out['predictions']}: {out['n_items']} questions of {out['dataset']}{run}, scoring "
        f"{out['scoring']}",
        err=True,
    )
    for m, s in out["methods"].items():
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
