"""Parts of the evaluation reports beside the accuracy table (used by
:mod:`biorag.eval.report.writer`).

- :func:`judged_section`: ``report.md``'s five-point judged answer score per method and run
  (mean, counts, the 1..5 distribution, the judge model), or why a run was not judged;
- :func:`accounting_section`: ``report.md``'s LLM calls and tokens per question per method;
- :func:`judged_cell` and :func:`accounting_table`: the same for the CLI's plain-text tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol


class RunLike(Protocol):
    """What these sections read of a run (:class:`biorag.eval.report.writer.Run`)."""

    @property
    def label(self) -> str: ...

    @property
    def methods(self) -> dict[str, dict[str, Any]]: ...


def fmt(v: Any, digits: int = 3) -> str:
    """A number for a table: ``digits`` decimals for floats, ``–`` for None."""
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """The lines of a Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines


def judged_cell(entry: dict[str, Any]) -> str:
    """A method's judged score in one cell: ``3.40 (n=18, 2 unscored)``; ``–`` when none."""
    block = entry.get("judged") or {}
    if not block.get("judge_model"):
        return "–"
    extra = f", {block['unscored']} unscored" if block.get("unscored") else ""
    return f"{fmt(block.get('mean'), 2)} (n={block.get('n', 0)}{extra})"


def judged_notes(methods: dict[str, dict[str, Any]]) -> list[str]:
    """Distinct notes of the methods' judged blocks, where the run had something to judge."""
    notes: list[str] = []
    for e in methods.values():
        block = e.get("judged") or {}
        if block.get("note") and block.get("eligible", 1) and block["note"] not in notes:
            notes.append(str(block["note"]))
    return notes


def judged_section(runs: Sequence[RunLike], label: Callable[[str], str]) -> list[str]:
    """``## Judged answer score`` lines; none when no run has a judged score or a note."""
    rows: list[list[str]] = []
    notes: list[str] = []
    for r in runs:
        for m, e in r.methods.items():
            b = e.get("judged") or {}
            if not b.get("judge_model"):
                continue
            dist = b.get("distribution") or {}
            rows.append(
                [
                    label(m),
                    r.label,
                    str(b["judge_model"]),
                    fmt(b.get("mean"), 2),
                    str(b.get("n", 0)),
                    str(b.get("unscored", 0)),
                    str(b.get("no_answer", 0)),
                    *(str(dist.get(str(k), 0)) for k in range(1, 6)),
                ]
            )
        notes += [f"note ({r.label}): {n}" for n in judged_notes(r.methods)]
    if not rows and not notes:
        return []
    lines = ["", "## Judged answer score (1-5)", ""]
    if rows:
        header = ["Approach", "dataset", "judge", "mean", "scored", "unscored", "no answer"]
        lines += md_table([*header, "1", "2", "3", "4", "5"], rows)
        lines += [
            "",
            "A judge model scores each answer 1-5 against the ideal answer (BioCDQA's "
            "evaluation); the mean is over scored answers. Unscored: the judge call failed "
            "(judged again on the next run) or gave no 1-5 score; no answer: the method failed "
            "or has not answered.",
        ]
    lines += [f"{n}" for n in notes]
    return lines


def citations_section(runs: Sequence[RunLike], label: Callable[[str], str]) -> list[str]:
    """``## Citation quality``: per method and run with free-text answers, the share of
    sentences their citations support (recall) and of citations that are needed (precision),
    by the verifier each answer was checked with."""
    rows = []
    for r in runs:
        for m, e in r.methods.items():
            c = e.get("citations")
            if not c:
                continue
            by = ", ".join(f"{k} {n}" for k, n in (c.get("verifiers") or {}).items())
            rows.append([label(m), r.label, fmt(c.get("recall")), fmt(c.get("precision")),
                         str(c.get("sentences")), str(c.get("citations")),
                         str(c.get("uncited")), str(c.get("unverified")), by])  # fmt: skip
    if not rows:
        return []
    header = ["Approach", "dataset", "citation recall", "citation precision", "sentences"]
    header += ["citations", "uncited sentences", "unverified sentences", "verifier"]
    return [
        "", "## Citation quality", "",
        "Recall: the share of answer sentences a cited passage supports fully; precision: "
        "the share of citations that support their sentence at least in part "
        "(biorag.verify.support; the verifier column counts the answers each verifier "
        "checked: rules is the no-LLM floor).", "",
        *md_table(header, rows),
    ]  # fmt: skip


def accounting_section(runs: Sequence[RunLike], label: Callable[[str], str]) -> list[str]:
    """``## Accounting (per question)``: LLM calls, tokens and seconds per method and run."""
    rows = []
    for r in runs:
        for m, e in r.methods.items():
            acc = e.get("accounting_per_question") or {}
            tot = acc.get("total") or {}
            stages = ", ".join(
                f"{s} {fmt(row.get('calls'), 2)}" for s, row in (acc.get("stages") or {}).items()
            )
            rows.append(
                [
                    label(m),
                    r.label,
                    fmt(tot.get("calls"), 2),
                    fmt(tot.get("prompt_tokens"), 1),
                    fmt(tot.get("completion_tokens"), 1),
                    fmt(tot.get("cache_hits"), 2),
                    fmt(e.get("seconds_per_question"), 2),
                    stages or "no LLM calls",
                ]
            )
    header = ["Approach", "dataset", "LLM calls", "prompt tokens", "completion tokens"]
    header += ["cache hits", "seconds", "calls per stage"]
    return ["", "## Accounting (per question)", "", *md_table(header, rows)]


def accounting_table(metrics: dict[str, Any]) -> str:
    """Per method: mean LLM calls and tokens per question, per stage."""
    lines = ["LLM use per question (mean):"]
    for m, e in (metrics.get("methods") or {}).items():
        acc = e.get("accounting_per_question") or {}
        tot = acc.get("total") or {}
        lines.append(
            f"  {m:<16} calls={fmt(tot.get('calls'), 2)} "
            f"prompt_tokens={fmt(tot.get('prompt_tokens'), 1)} "
            f"completion_tokens={fmt(tot.get('completion_tokens'), 1)} "
            f"seconds={fmt(e.get('seconds_per_question'), 2)}"
        )
        for s, row in (acc.get("stages") or {}).items():
            lines.append(
                f"    {s:<20} calls={fmt(row.get('calls'), 2)} "
                f"prompt_tokens={fmt(row.get('prompt_tokens'), 1)} "
                f"completion_tokens={fmt(row.get('completion_tokens'), 1)}"
            )
        judged = (e.get("judged") or {}).get("accounting")
        if judged:
            lines.append(
                f"    {'judge (all answers)':<20} calls={judged.get('calls', 0)} "
                f"prompt_tokens={judged.get('prompt_tokens', 0)} "
                f"completion_tokens={judged.get('completion_tokens', 0)}"
            )
    return "\n".join(lines)
