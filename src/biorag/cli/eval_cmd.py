"""``biorag eval``: run methods on a benchmark (resumable), judge the answers, tabulate them.

``biorag eval`` answers and (``--judge``) judges; ``biorag eval judge`` judges an existing run
again (another judge model, failed judge calls); ``biorag eval report`` writes the tables;
``biorag eval score`` (:mod:`.eval_score_cmd`) scores a predictions file.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from biorag.cli import eval_score_cmd
from biorag.cli.common import (
    RAY_ADDRESS_HELP,
    STATE,
    emit_json,
    executor_help,
    handle_errors,
    open_executor,
    parse_json_option,
)
from biorag.errors import BioragError
from biorag.eval.judging.judge_run import rejudge_run
from biorag.eval.run.near_duplicates import THRESHOLD
from biorag.eval.run.records import METRICS_FILE, read_json
from biorag.eval.run.source_docs import check_policy

if TYPE_CHECKING:
    from biorag.eval.run.runner import EvalSummary

JUDGE_MODES = ("auto", "on", "off")

app = typer.Typer(
    help="Evaluate QA methods on a benchmark; resumable, with per-question accounting.",
)


def _methods(value: str | None) -> list[str]:
    methods = [m.strip() for m in (value or "").split(",") if m.strip()]
    if not methods:
        raise BioragError("pass --methods m1,m2 (e.g. --methods closed-book,claims)")
    return methods


@app.callback(invoke_without_command=True)
@handle_errors
def run(
    ctx: typer.Context,
    dataset: str = typer.Option(None, "--dataset", help="benchmark name (pubmedqa, mirage, ...)"),
    data: Path = typer.Option(None, "--data", help="the dataset file or folder"),
    split: str = typer.Option(None, "--split", help="e.g. test (PubMedQA's 500 test questions)"),
    setting: str = typer.Option(
        None,
        "--setting",
        help="reasoning-required (given context) | open (retrieve); the loader checks it",
    ),
    index: list[Path] = typer.Option([], "--index", help="index dir (repeat: one per corpus)"),
    methods: str = typer.Option(None, "--methods", help="comma-separated: closed-book,claims"),
    method_options: str = typer.Option(
        None, "--method-options", help='JSON keyed by method: {"claims": {"mode": "faithful"}}'
    ),
    out: Path = typer.Option(None, "--out", help="run directory (created, or resumed)"),
    limit: int = typer.Option(None, "--limit", help="only the first N questions"),
    concurrency: int = typer.Option(4, "--concurrency", help="questions answered at once"),
    retry_errors: bool = typer.Option(
        True, "--retry-errors/--keep-errors", help="on resume, answer failed questions again"
    ),
    judge: str = typer.Option(
        None,
        "--judge",
        help="five-point judged answer score: auto (when a judge model and ideal answers exist)"
        " | on (required) | off; default: judge.mode",
    ),
    allow_overlap: bool = typer.Option(
        False,
        "--allow-overlap",
        help="score questions whose answers went into a method's knowledge graph (reported)",
    ),
    exclude_overlap: bool = typer.Option(
        False,
        "--exclude-overlap",
        help="leave out the questions whose answers went into a method's knowledge graph",
    ),
    overlap_threshold: float = typer.Option(
        THRESHOLD,
        "--overlap-threshold",
        help="cosine (bundled MiniLM) at which a question paraphrases one a method's knowledge "
        "graph was built from (refused, excluded or allowed as an exact repeat)",
    ),
    source_docs: str = typer.Option(
        "exclude",
        "--source-docs",
        help="open setting: exclude (each PubMedQA question's own abstract never reaches its "
        "context) | exclude-gold (every gold document too, BioASQ's included) | allow (kept, "
        "counted); reported",
    ),
    scoring: str = typer.Option(
        "official",
        "--scoring",
        help="official (each benchmark's own evaluator) | biorag (biorag's variants)",
    ),
    mask_entities: bool = typer.Option(
        False,
        "--mask-entities",
        help="mask the key entities of each question, its options and its passages, given or "
        "retrieved (CLAIMS' entity masking, table 4)",
    ),
    executor: str = typer.Option(
        None, "--executor", help=executor_help("answering (each worker answers --concurrency)")
    ),
    ray_address: str = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    as_json: bool = typer.Option(False, "--json", help="print metrics.json"),
) -> None:
    """Answer every question with every method into OUT, resuming a killed run, then score it."""
    if ctx.invoked_subcommand is not None:
        return
    names, mopts = _checked_run_options(
        dataset, data, out, judge, allow_overlap, exclude_overlap, methods, method_options,
        source_docs,
    )  # fmt: skip
    # lazy: the runner and what it imports: ~40 ms at every CLI start
    from biorag.eval.run.runner import run_eval

    with open_executor(executor, ray_address) as runner:
        summary = run_eval(
            STATE.settings(),
            dataset,
            data,
            split=split,
            setting=setting,
            index_paths=list(index),
            methods=names,
            method_options=mopts,
            out_dir=out,
            limit=limit,
            concurrency=concurrency,
            retry_errors=retry_errors,
            judge=judge,
            overlap="allow" if allow_overlap else "exclude" if exclude_overlap else "refuse",
            overlap_threshold=overlap_threshold,
            source_docs=source_docs,
            scoring=scoring,
            mask_entities=mask_entities,
            executor=runner,
        )
    _report_run(summary, out, as_json)


def _checked_run_options(
    dataset: str | None,
    data: Path | None,
    out: Path | None,
    judge: str | None,
    allow_overlap: bool,
    exclude_overlap: bool,
    methods: str | None,
    method_options: str | None,
    source_docs: str = "exclude",
) -> tuple[list[str], dict[str, Any]]:
    """Check ``biorag eval``'s options; the method names and the parsed ``--method-options``."""
    if not dataset or data is None or out is None:
        raise BioragError("biorag eval needs --dataset NAME --data PATH --methods m1,m2 --out DIR")
    if not Path(data).exists():
        raise BioragError(f"--data {data} does not exist")
    if judge is not None and judge not in JUDGE_MODES:
        raise BioragError(f"--judge must be one of {', '.join(JUDGE_MODES)}, not {judge!r}")
    if allow_overlap and exclude_overlap:
        raise BioragError("pass --allow-overlap or --exclude-overlap, not both")
    check_policy(source_docs)  # before an executor starts
    names = _methods(methods)
    mopts = parse_json_option(method_options, "--method-options") or {}
    if not isinstance(mopts, dict) or not all(isinstance(v, dict) for v in mopts.values()):
        raise BioragError(
            '--method-options must be a JSON object keyed by method, e.g. {"claims": {"mode": '
            '"faithful"}}'
        )
    return names, mopts


def _report_run(summary: EvalSummary, out: Path, as_json: bool) -> None:
    """Write the run's report; print its summary (stderr) and its metrics (table or JSON)."""
    # lazy: the report writer: ~8 ms at every CLI start
    from biorag.eval.report.writer import accounting_table, metrics_table, write_report

    report = write_report(out)
    for line in summary.skips.lines():
        typer.echo(line, err=True)
    typer.echo(
        f"{summary.answered_now} answers now ({summary.errors_now} failed), "
        f"{summary.already_done} from before; report: {report}",
        err=True,
    )
    if summary.executor:
        workers = summary.executor.get("workers") or {}
        typer.echo(
            f"answered on {summary.executor.get('kind')}: {len(workers)} workers ("
            + ", ".join(f"{w} {int(st['rows'])}" for w, st in sorted(workers.items()))
            + ")",
            err=True,
        )
    for guard in ("kg_overlap", "source_exclusion"):
        note = (summary.metrics.get(guard) or {}).get("note")
        if note:
            typer.echo(note, err=True)
    if summary.judged_now or summary.judge_failed_now or summary.already_judged:
        typer.echo(
            f"judged {summary.judged_now} answers now ({summary.judge_failed_now} judge calls "
            f"failed, judged again on the next run), {summary.already_judged} from before",
            err=True,
        )
    typer.echo(accounting_table(summary.metrics), err=True)
    wall = (summary.metrics.get("accounting") or {}).get("wall_s")
    if wall is not None:
        typer.echo(f"wall time: {wall:.2f} s", err=True)
    if as_json:
        emit_json(summary.metrics)
        return
    typer.echo(metrics_table(summary.metrics))


@app.command()
@handle_errors
def report(
    out: Path = typer.Option(..., "--out", help="where report.md goes (a run directory)"),
    run_dirs: list[Path] = typer.Option(
        [], "--run", help="run directories to merge into one table (default: --out itself)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the merged metrics"),
) -> None:
    """Rebuild report.md (and accuracy.png) from finished run directories."""
    # lazy: the report writer: ~8 ms at every CLI start
    from biorag.eval.report.writer import metrics_table, write_report

    path = write_report(out, list(run_dirs) or None)
    if as_json:
        emit_json({str(d): read_json(Path(d) / METRICS_FILE) for d in (run_dirs or [out])})
        return
    typer.echo(f"report: {path}")
    for d in run_dirs or [out]:
        typer.echo(f"\n{d}:")
        typer.echo(metrics_table(read_json(Path(d) / METRICS_FILE)))


@app.command()
@handle_errors
def judge(
    out: Path = typer.Option(..., "--out", help="an evaluation run directory"),
    data: Path = typer.Option(
        None, "--data", help="the run's dataset file or folder (default: the path in run.json)"
    ),
    as_json: bool = typer.Option(False, "--json", help="print the rewritten metrics.json"),
) -> None:
    """Judge a run's answers (five-point score) without answering again; rewrite its metrics.

    Judges what is not judged yet with the configured judge model (the judge settings,
    BIORAG_JUDGE_*):
    everything after a change of judge model, else only new answers and failed judge calls.
    """
    # lazy: the report writer: ~8 ms at every CLI start
    from biorag.eval.report.writer import metrics_table, write_report

    if not (out / "run.json").is_file():
        raise BioragError(f"{out} has no run.json; pass --out with an evaluation run directory")
    metrics, stats = rejudge_run(STATE.settings(), out, data_path=data)
    path = write_report(out)
    typer.echo(
        f"judged {stats.judged_now} answers now ({stats.failed_now} judge calls failed, judged "
        f"again on the next run), {stats.already_judged} from before; report: {path}",
        err=True,
    )
    if as_json:
        emit_json(metrics)
        return
    typer.echo(metrics_table(metrics))


@app.command()
@handle_errors
def components(
    dataset: str = typer.Option(..., "--dataset", help="benchmark name (pubmedqa, mirage, ...)"),
    data: Path = typer.Option(..., "--data", help="the dataset file or folder"),
    split: str = typer.Option(None, "--split"),
    setting: str = typer.Option(None, "--setting", help="e.g. reasoning-required"),
    index: list[Path] = typer.Option([], "--index", help="index dir (repeat: one per corpus)"),
    options: str = typer.Option(
        None, "--method-options", help='the claims options as JSON: {"mode": "faithful"}'
    ),
    out: Path = typer.Option(..., "--out", help="directory for components.jsonl/.json"),
    limit: int = typer.Option(None, "--limit", help="only the first N questions"),
    as_json: bool = typer.Option(False, "--json", help="print components.json"),
) -> None:
    """CLAIMS' component metrics (paper tables 2-5) on a benchmark; resumable."""
    import asyncio

    # lazy: the component metrics: ~20 ms at every CLI start
    from biorag.eval.components.benchmark import run_components

    if not Path(data).exists():
        raise BioragError(f"--data {data} does not exist")
    if limit is not None and limit < 1:
        raise BioragError("--limit must be at least 1")
    opts = parse_json_option(options, "--method-options") or {}
    if not isinstance(opts, dict):
        raise BioragError("--method-options must be a JSON object of claims options")
    summary = asyncio.run(
        run_components(
            STATE.settings(), dataset, data, out_dir=out, split=split, setting=setting,
            index_paths=list(index), options=opts, limit=limit,
        )
    )  # fmt: skip
    if as_json:
        emit_json(summary)
        return
    typer.echo(f"{summary['questions']} of {summary['n_items']} questions scored")
    for key, v in summary["means"].items():
        typer.echo(f"  {key:45s} {v['mean']:.3f}  (n={v['n']})")
    for key, why in summary["skipped"].items():
        typer.echo(f"  {key}: skipped ({'; '.join(why)})", err=True)


app.command(name="score")(eval_score_cmd.score)
