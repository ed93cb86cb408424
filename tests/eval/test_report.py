"""report.md from run directories: paper-shaped tables, accounting, merging, the chart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from biorag.errors import BioragError
from biorag.eval.report.writer import accounting_table, metrics_table, write_report


def _method(acc: float, subsets: dict[str, float] | None = None, f1: float | None = None) -> dict:
    e = {
        "n": 10,
        "answered": 9,
        "unparseable": 1,
        "errors": 0,
        "missing": 0,
        "accuracy": acc,
        "accounting_per_question": {
            "stages": {"answer": {"calls": 1.0, "prompt_tokens": 100.0, "completion_tokens": 5.0}},
            "total": {"calls": 2.0, "prompt_tokens": 150.0, "completion_tokens": 9.0},
        },
        "seconds_per_question": 0.5,
        "scores": {"n": 10, "accuracy": acc},
    }
    if subsets:
        e["by_subset"] = {s: {"n": 5, "accuracy": a} for s, a in subsets.items()}
    if f1 is not None:
        e["macro_f1"] = f1
    return e


def write_run(path: Path, dataset: str, methods: dict[str, dict], split=None) -> Path:
    path.mkdir(parents=True)
    metrics = {"dataset": dataset, "split": split, "setting": None, "n_items": 10}
    metrics["methods"] = methods
    (path / "metrics.json").write_text(json.dumps(metrics))
    (path / "run.json").write_text(
        json.dumps(
            {
                "dataset": dataset,
                "models": {"llm_backend": "openai", "llm_model": "mistral-7b"},
                "indexes": [{"name": "textbooks"}, {"name": "statpearls"}],
            }
        )
    )
    return path


def table_rows(text: str, heading: str) -> list[str]:
    section = text.split(f"## {heading}")[1].split("\n## ")[0]
    return [ln for ln in section.splitlines() if ln.startswith("| ") and "---" not in ln]


def test_report_has_a_row_per_method_and_a_column_per_subject(tmp_path):
    mmlu = {"anatomy": 0.5, "college_biology": 0.6}
    run = write_run(
        tmp_path / "mmlu",
        "mmlu",
        {"closed-book": _method(0.55, mmlu), "claims": _method(0.65, mmlu)},
    )
    path = write_report(run)
    text = path.read_text()
    rows = table_rows(text, "Accuracy")
    assert rows[0].startswith("| Approach | MMLU-A | MMLU-CB | MMLU all |")
    assert rows[1].startswith("| Baseline (`closed-book`) | 0.500 | 0.600 | 0.550 |")
    assert rows[2].startswith("| CLAIMS (`claims`) |")
    acc_rows = table_rows(text, "Accounting (per question)")
    assert len(acc_rows) == 3 and "| 2.00 | 150.0 | 9.0 |" in acc_rows[1]
    assert "answer 1.00" in acc_rows[1]
    assert "mistral-7b" in text and "textbooks, statpearls" in text
    # the chart, or a note saying why there is none
    try:
        import matplotlib  # noqa: F401

        assert (run / "accuracy.png").stat().st_size > 0
        assert "![accuracy per method](accuracy.png)" in text
    except ImportError:
        assert "matplotlib is not installed" in text


def test_pubmedqa_gets_accuracy_and_macro_f1_and_runs_merge(tmp_path):
    pm = write_run(
        tmp_path / "pm",
        "pubmedqa",
        {"closed-book": _method(0.5, f1=0.4), "hyde": _method(0.6, f1=0.45)},
        split="test",
    )
    steps = {"step1": 0.4, "step2&3": 0.48}  # MedQA's subsets stay one column, as in the paper
    mq = write_run(
        tmp_path / "mq",
        "medqa",
        {"closed-book": _method(0.44, steps), "raptor": _method(0.5, steps)},
    )
    out = tmp_path / "merged"
    text = write_report(out, [pm, mq]).read_text()
    rows = table_rows(text, "Accuracy")
    assert rows[0].startswith("| Approach | PMQA acc | PMQA macro-F1 | MedQA |")
    assert rows[1] == "| Baseline (`closed-book`) | 0.500 | 0.400 | 0.440 |"
    assert rows[2] == "| HyDE (`hyde`) | 0.600 | 0.450 | – |"
    assert rows[3] == "| RAPTOR (`raptor`) | – | – | 0.500 |"
    assert len(table_rows(text, "Answers")) == 1 + 4


def test_mmlu_validation_is_one_column(tmp_path):
    run = write_run(
        tmp_path / "v", "mmlu", {"claims": _method(0.69, {"anatomy": 0.6, "virology": 0.7})}
    )
    metrics = json.loads((run / "metrics.json").read_text())
    (run / "metrics.json").write_text(json.dumps({**metrics, "parts": ["val"]}))
    rows = table_rows(write_report(run).read_text(), "Accuracy")
    assert rows == ["| Approach | MMLU-V |", "| CLAIMS (`claims`) | 0.690 |"]


def test_non_multiple_choice_columns_come_from_the_scores(tmp_path):
    e = _method(0.0)
    del e["accuracy"]
    e["scores"] = {
        "n": 10,
        "answered": 9,
        "yesno": {"accuracy": 0.8, "macro_f1": 0.7},
        "factoid": {"strict_accuracy": 0.3, "mrr": 0.35},
        "summary": {"n": 2},
    }
    run = write_run(tmp_path / "bq", "bioasq", {"claims": e})
    text = write_report(run).read_text()
    header = table_rows(text, "Accuracy")[0]
    assert "BioASQ yesno.accuracy" in header and "BioASQ factoid.mrr" in header
    assert "summary" not in header and "answered" not in header
    assert "yesno.accuracy=0.800" in text


def test_cli_tables(tmp_path):
    metrics = {"dataset": "medqa", "methods": {"closed-book": _method(0.44)}}
    table = metrics_table(metrics)
    assert "closed-book" in table and "0.440" in table and "MedQA" in table
    acc = accounting_table(metrics)
    assert "calls=2.00" in acc and "answer" in acc


def test_missing_metrics_is_a_clear_error(tmp_path):
    with pytest.raises(BioragError, match=r"has no metrics\.json"):
        write_report(tmp_path)


def _judged(mean, n, dist, unscored=0, model="openai:gpt-4o") -> dict:
    return {
        "mean": mean,
        "n": n,
        "unscored": unscored,
        "failed": unscored,
        "unusable": 0,
        "no_answer": 0,
        "eligible": n + unscored,
        "distribution": dist,
        "judge_model": model,
        "accounting": {"calls": n + unscored, "prompt_tokens": 900, "completion_tokens": 40},
    }


def test_judged_scores_in_the_report_and_the_cli_table(tmp_path):
    rr, cb = _method(0.5), _method(0.4)
    rr["judged"] = _judged(3.5, 4, {"1": 0, "2": 1, "3": 1, "4": 1, "5": 1}, unscored=1)
    cb["judged"] = _judged(2.0, 2, {"1": 1, "2": 0, "3": 1, "4": 0, "5": 0})
    run = write_run(tmp_path / "cd", "biocdqa", {"retrieve-read": rr, "closed-book": cb})
    text = write_report(run).read_text()
    rows = table_rows(text, "Judged answer score (1-5)")
    assert rows[0].startswith("| Approach | dataset | judge | mean | scored | unscored |")
    rr_row = "| RAG (`retrieve-read`) | biocdqa | openai:gpt-4o | 3.50 | 4 | 1 | 0 |"
    assert rows[1] == rr_row + " 0 | 1 | 1 | 1 | 1 |"
    assert rows[2].startswith("| Baseline (`closed-book`) | biocdqa | openai:gpt-4o | 2.00 | 2 |")
    metrics = json.loads((run / "metrics.json").read_text())
    table = metrics_table(metrics)
    assert "judged (1-5)" in table.splitlines()[0]
    assert "3.50 (n=4, 1 unscored)" in table and "2.00 (n=2)" in table
    assert "judge (all answers)  calls=5" in accounting_table(metrics)


def test_judged_notes_and_old_runs_without_judging(tmp_path):
    e = _method(0.5)
    e["judged"] = {"note": "not judged: no judge model is configured", "eligible": 3}
    run = write_run(tmp_path / "a", "biocdqa", {"closed-book": e})
    text = write_report(run).read_text()
    assert "note (biocdqa): not judged: no judge model is configured" in text
    assert "judged: not judged" in metrics_table(json.loads((run / "metrics.json").read_text()))
    # an MC dataset (nothing to judge) and a metrics.json from before judging: no section
    mc = _method(0.5)
    mc["judged"] = {"note": "not judged: no question in this run has an ideal answer",
                    "eligible": 0}  # fmt: skip
    old = write_run(tmp_path / "b", "medqa", {"closed-book": mc, "hyde": _method(0.6)})
    text = write_report(old).read_text()
    assert "Judged answer score" not in text and "ideal answer" not in text
