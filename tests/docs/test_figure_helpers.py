"""The shared helpers of benchmarks/figures/: a row found by its fields (or an error naming what
was looked for), and a run's scores in words by the template of its dataset."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_find_row_finds_by_fields_or_names_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, benchmarks_path: Path
) -> None:
    import figures

    rows = [{"scale": "1m", "stage": "bm25", "p50": 1}, {"scale": "1m", "stage": "dense", "p50": 2}]
    (tmp_path / "speed.json").write_text(json.dumps({"rows": rows}))
    monkeypatch.setattr(figures, "RESULTS", tmp_path)
    figures.result.cache_clear()
    try:
        assert figures.find_row("speed.json", "rows", scale="1m", stage="dense")["p50"] == 2
        with pytest.raises(
            figures.FigureError, match="no row in 'rows' with scale='1m', stage='x'"
        ):
            figures.find_row("speed.json", "rows", scale="1m", stage="x")
    finally:
        figures.result.cache_clear()


def test_score_summary_picks_the_template_of_the_dataset(benchmarks_path: Path) -> None:
    import figures

    pubmedqa = {"accuracy": 0.46, "n": 50, "macro_f1": 0.3}
    bioasq = {"yesno": {"accuracy": 0.5, "n": 10, "macro_f1": 0.4},
              "factoid": {"strict_accuracy": 0.25, "n": 8}}  # fmt: skip
    pq, ba = (
        "{accuracy:.2f} ({correct}/{n}) {macro_f1:.1f}",
        "{yesno_correct}/{yesno[n]} {factoid_correct}",
    )
    assert figures.score_summary(pubmedqa, pq, ba) == "0.46 (23/50) 0.3"
    assert figures.score_summary(bioasq, pq, ba) == "5/10 2"
