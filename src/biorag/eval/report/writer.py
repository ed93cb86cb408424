"""Reports of evaluation runs: tables shaped like the papers' and an accuracy chart.

:func:`write_report` reads ``metrics.json`` and ``run.json`` of one run directory (or of several,
e.g. one per dataset, merged into one table) and writes ``report.md`` and ``accuracy.png``:

- accuracy: one row per method, one column per dataset, or per subset where a dataset has
  them (MIRAGE's five, MMLU's subjects); PubMedQA gets accuracy and macro-F1;
- answers: questions answered, unparseable, failed and missing per method and dataset;
- dataset metrics: every number ``score_dataset`` returned (BioASQ exact answers, documents);
- judged answer score: the five-point judge's mean, counts and distribution per method
  (where the run was judged, :mod:`biorag.eval.judging.judge_run`);
- accounting: LLM calls and tokens per question per method (and per stage), seconds per
  question.

The judged and accounting sections live in :mod:`biorag.eval.report.sections`.

The chart needs matplotlib (imported lazily, Agg backend); without it report.md says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biorag.errors import BioragError
from biorag.eval.report.sections import (
    accounting_section,
    citations_section,
    judged_cell,
    judged_notes,
    judged_section,
)
from biorag.eval.report.sections import accounting_table as accounting_table
from biorag.eval.report.sections import fmt as _fmt
from biorag.eval.report.sections import md_table as _table
from biorag.eval.run.records import CHART_FILE, METRICS_FILE, REPORT_FILE, RUN_FILE, read_json
from biorag.util.files import write_text_atomic

# The papers' names for methods and columns (CLAIMS Table 1, MIRAGE, VectorGraphRAG Table 2).
METHOD_LABELS = {
    "closed-book": "Baseline",
    "rewrite": "Rewrite",
    "hyde": "HyDE",
    "raptor": "RAPTOR",
    "claims": "CLAIMS",
    "claim-chunks": "Claim",
    "claim_chunks": "Claim",
    "claim": "Claim",
    "retrieve-read": "RAG",
    "vectorgraphrag": "VectorGraphRAG",
    "ip-rar": "IP-RAR",
}
DATASET_LABELS = {
    "pubmedqa": "PMQA",
    "medqa": "MedQA",
    "medmcqa": "MedMCQA",
    "mmlu": "MMLU",
    "mirage": "MIRAGE",
    "bioasq": "BioASQ",
}
# Datasets whose subsets are the papers' columns (MMLU subjects, MIRAGE's five benchmarks).
PER_SUBSET = ("mmlu", "mirage")
SUBSET_LABELS = {
    "anatomy": "MMLU-A",
    "college_biology": "MMLU-CB",
    "college_medicine": "MMLU-CM",
    "professional_medicine": "MMLU-PM",
    "medical_genetics": "MMLU-MG",
    "clinical_knowledge": "MMLU-CK",
    "validation": "MMLU-V",
    # MIRAGE's subsets
    "mmlu": "MMLU-Med",
    "medqa": "MedQA-US",
    "medmcqa": "MedMCQA",
    "pubmedqa": "PubMedQA*",
    "bioasq": "BioASQ-Y/N",
}


@dataclass
class Column:
    """One column of the accuracy table: a label and a value per method."""

    label: str
    values: dict[str, float | None] = field(default_factory=dict)
    chart: bool = True  # accuracy-like values go into the chart


@dataclass
class Run:
    path: Path
    metrics: dict[str, Any]
    config: dict[str, Any]

    @property
    def dataset(self) -> str:
        return str(self.metrics.get("dataset", self.path.name))

    @property
    def label(self) -> str:
        ds = self.dataset.lower()
        label = DATASET_LABELS.get(ds, self.dataset)
        split = self.metrics.get("split")
        return f"{label} ({split})" if split and split not in ("test",) else label

    @property
    def methods(self) -> dict[str, dict[str, Any]]:
        return dict(self.metrics.get("methods") or {})


def method_label(name: str) -> str:
    label = METHOD_LABELS.get(name)
    return f"{label} (`{name}`)" if label and label != name else name


def load_run(path: str | Path) -> Run:
    path = Path(path)
    metrics = read_json(path / METRICS_FILE)
    config = read_json(path / RUN_FILE) if (path / RUN_FILE).is_file() else {}
    return Run(path=path, metrics=metrics, config=config)


def _flatten(d: Any, prefix: str = "") -> dict[str, float]:
    """Numeric leaves of a nested dict as ``a.b.c`` -> number."""
    out: dict[str, float] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(d, bool):
        pass
    elif isinstance(d, int | float):
        out[prefix] = float(d)
    return out


def accuracy_columns(run: Run) -> list[Column]:
    """The run's columns of the main table (see the module docstring)."""
    methods = run.methods
    if not methods:
        return []
    first = next(iter(methods.values()))
    cols: list[Column] = []
    if "accuracy" in first:
        acc = {m: e.get("accuracy") for m, e in methods.items()}
        subsets = sorted(first.get("by_subset") or {})
        ds = run.dataset.lower()
        if ds == "mmlu" and run.metrics.get("parts") == ["val"]:
            cols.append(Column("MMLU-V", acc))
        elif ds in PER_SUBSET and len(subsets) > 1:
            for s in subsets:
                cols.append(
                    Column(
                        SUBSET_LABELS.get(s, s),
                        {
                            m: (e.get("by_subset") or {}).get(s, {}).get("accuracy")
                            for m, e in methods.items()
                        },
                    )
                )
            cols.append(Column(f"{run.label} all", acc))
        elif ds in PER_SUBSET and subsets:
            cols.append(Column(SUBSET_LABELS.get(subsets[0], subsets[0]), acc))
        elif "pubmedqa" in ds:
            cols.append(Column(f"{run.label} acc", acc))
            f1 = {m: e.get("macro_f1") for m, e in methods.items()}
            cols.append(Column(f"{run.label} macro-F1", f1, chart=False))
        else:
            cols.append(Column(run.label, acc))
        return cols
    # Not multiple choice: the dataset's own measures (BioASQ yes/no, factoid, list, documents).
    flat = {m: _measures(e.get("scores") or {}) for m, e in methods.items()}
    keys: list[str] = []
    for f in flat.values():
        keys += [k for k in f if k not in keys]
    for k in keys:
        cols.append(
            Column(
                f"{run.label} {k}",
                {m: flat[m].get(k) for m in methods},
                chart=k.endswith("accuracy"),
            )
        )
    return cols


_BOOKKEEPING = ("n", "answered", "unparseable", "missing")


def _measures(scores: dict[str, Any]) -> dict[str, float]:
    """``score_dataset``'s measures, flattened, without counts and per-subset rows."""
    return {
        k: v
        for k, v in _flatten(scores).items()
        if k.split(".")[-1] not in _BOOKKEEPING and not k.startswith(("per_subset.", "summary."))
    }


def _all_methods(runs: list[Run]) -> list[str]:
    out: list[str] = []
    for r in runs:
        for m in r.methods:
            if m not in out:
                out.append(m)
    return out


def write_chart(path: Path, columns: list[Column], methods: list[str]) -> str | None:
    """A grouped bar chart of accuracy per method per column; returns a note when skipped."""
    cols = [c for c in columns if c.chart and any(v is not None for v in c.values.values())]
    if not cols:
        return "no accuracy columns to chart"
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "chart skipped: matplotlib is not installed (`pip install matplotlib`)"
    width = 0.8 / max(len(methods), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(cols) + 2), 4.0))
    for i, m in enumerate(methods):
        xs = [j + i * width for j in range(len(cols))]
        ys = [c.values.get(m) or 0.0 for c in cols]
        ax.bar(xs, ys, width, label=METHOD_LABELS.get(m, m))
    ax.set_xticks([j + width * (len(methods) - 1) / 2 for j in range(len(cols))])
    ax.set_xticklabels([c.label for c in cols], rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("accuracy")
    ax.legend(fontsize="small")
    fig.tight_layout()
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp, dpi=120)
    plt.close(fig)
    tmp.replace(path)
    return None


def _runs_section(runs: list[Run]) -> list[str]:
    """The table of the runs: directory, dataset, split, setting, questions, LLM, indexes."""
    rows = []
    for r in runs:
        models = r.config.get("models") or {}
        idx = ", ".join(str(i.get("name")) for i in r.config.get("indexes") or []) or "–"
        rows.append(
            [
                r.path.name,
                r.dataset,
                str(r.metrics.get("split") or "–"),
                str(r.metrics.get("setting") or "–"),
                str(r.metrics.get("n_items", "–")),
                f"{models.get('llm_backend', '?')}:{models.get('llm_model') or '-'}",
                idx,
            ]
        )
    return _table(["run", "dataset", "split", "setting", "questions", "LLM", "indexes"], rows)


def _accuracy_section(runs: list[Run], columns: list[Column], methods: list[str]) -> list[str]:
    """The ``## Accuracy`` section: the main table and how it was scored."""
    lines = ["", "## Accuracy", ""]
    if columns:
        lines += _table(
            ["Approach", *[c.label for c in columns]],
            [[method_label(m)] + [_fmt(c.values.get(m)) for c in columns] for m in methods],
        )
        lines += [
            "",
            "Accuracy counts every question: unparseable answers, failures and missing answers "
            "are wrong; an `all` column is over all of the dataset's questions.",
        ]
        modes = sorted({str(r.metrics.get("scoring") or "biorag") for r in runs})
        lines += [
            "",
            f"Scoring: {', '.join(modes)}. `official` = each benchmark's own evaluator (PubMedQA "
            "macro-F1 as its evaluation.py, an unanswered question a class of its own; MIRAGE "
            "the mean of its subsets); `biorag` = biorag's variants (docs/fidelity.md).",
        ]
    else:
        lines.append("(no metrics)")
    return lines


def _answers_section(runs: list[Run]) -> list[str]:
    """The ``## Answers`` section: answered, unparseable, failed and missing per method."""
    lines = ["", "## Answers", ""]
    rows = []
    for r in runs:
        for m, e in r.methods.items():
            rows.append(
                [
                    method_label(m),
                    r.label,
                    *(
                        str(e.get(k, "–"))
                        for k in ("n", "answered", "unparseable", "errors", "missing")
                    ),
                ]
            )
    lines += _table(
        ["Approach", "dataset", "n", "answered", "unparseable", "errors", "missing"], rows
    )
    return lines


def _dataset_metrics_section(runs: list[Run]) -> list[str]:
    """The ``## Dataset metrics`` section (score_dataset's numbers), empty when there are none."""
    lines: list[str] = []
    score_rows = []
    for r in runs:
        for m, e in r.methods.items():
            flat = _measures(e.get("scores") or {})
            if flat:
                shown = ", ".join(f"{k}={_fmt(v)}" for k, v in flat.items())
                score_rows.append([method_label(m), r.label, shown])
            elif e.get("scores_error"):
                score_rows.append(
                    [method_label(m), r.label, f"scoring failed: {e['scores_error']}"]
                )
    if score_rows:
        lines += ["", "## Dataset metrics", ""]
        lines += _table(["Approach", "dataset", "metrics"], score_rows)
    return lines


def _run_notes(runs: list[Run]) -> list[str]:
    """The runs' notes (and those of their leakage guards: KG overlap, source documents)."""
    lines: list[str] = []
    for r in runs:
        if r.metrics.get("note"):
            lines += ["", f"note ({r.label}): {r.metrics['note']}"]
        for key in ("kg_overlap", "source_exclusion"):
            if (r.metrics.get(key) or {}).get("note"):
                lines += ["", f"note ({r.label}): {r.metrics[key]['note']}"]
    return lines


def render_report(runs: list[Run], chart_note: str | None, chart_name: str | None) -> str:
    methods = _all_methods(runs)
    columns = [c for r in runs for c in accuracy_columns(r)]
    lines = ["# Evaluation report", ""]
    lines += _runs_section(runs)
    lines += _accuracy_section(runs, columns, methods)
    lines += _answers_section(runs)
    lines += _dataset_metrics_section(runs)
    lines += _run_notes(runs)
    lines += judged_section(runs, method_label)
    lines += citations_section(runs, method_label)
    lines += accounting_section(runs, method_label)
    lines += ["", "## Chart", ""]
    if chart_note:
        lines.append(f"({chart_note})")
    elif chart_name:
        lines.append(f"![accuracy per method]({chart_name})")
    return "\n".join(lines) + "\n"


def write_report(out_dir: str | Path, runs: list[str | Path] | None = None) -> Path:
    """Write ``report.md`` (and ``accuracy.png``) into ``out_dir``; returns the report's path.

    ``runs``: run directories to merge into one report (default: ``out_dir`` itself).
    """
    out = Path(out_dir)
    dirs = [Path(p) for p in (runs or [out])]
    loaded = []
    for d in dirs:
        if not (d / METRICS_FILE).is_file():
            raise BioragError(f"{d} has no {METRICS_FILE}; run its evaluation to completion first")
        loaded.append(load_run(d))
    out.mkdir(parents=True, exist_ok=True)
    columns = [c for r in loaded for c in accuracy_columns(r)]
    note = write_chart(out / CHART_FILE, columns, _all_methods(loaded))
    path = out / REPORT_FILE
    write_text_atomic(path, render_report(loaded, note, CHART_FILE))
    return path


def metrics_table(metrics: dict[str, Any]) -> str:
    """A plain-text table of one run's main metrics (the CLI prints it at the end of a run)."""
    run = Run(path=Path("."), metrics=metrics, config={})
    cols = accuracy_columns(run)
    methods = list(run.methods)
    if any((e.get("judged") or {}).get("judge_model") for e in run.methods.values()):
        cols.append(Column("judged (1-5)", {}))
    header = ["method", *[c.label for c in cols], "answered", "unparseable", "errors"]
    rows = [
        [m]
        + [
            judged_cell(run.methods[m]) if c.label == "judged (1-5)" else _fmt(c.values.get(m))
            for c in cols
        ]
        + [str(run.methods[m].get(k, "")) for k in ("answered", "unparseable", "errors")]
        for m in methods
    ]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True))]
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    lines += [f"judged: {n}" for n in judged_notes(run.methods)]
    return "\n".join(lines)
