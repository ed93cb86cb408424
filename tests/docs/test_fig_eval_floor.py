"""The evaluation harness's figures say the scoring and commit each run records, or that it
records none."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def test_a_run_names_its_scoring_and_commit_or_says_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, benchmarks_path: Path
) -> None:
    import figures
    from figures import fig_eval_floor

    for run, extra in [("old", {}), ("new", {"scoring": "official", "commit": "abc1234"})]:
        (tmp_path / run).mkdir()
        (tmp_path / run / "metrics.json").write_text(json.dumps({"methods": {}, **extra}))
        (tmp_path / run / "run.json").write_text("{}")
    monkeypatch.setattr(figures, "RESULTS", tmp_path)
    figures.result.cache_clear()
    try:
        assert fig_eval_floor.recorded("old") == (
            "`old` (scoring not recorded, commit not recorded)"
        )
        assert fig_eval_floor.recorded("new") == "`new` (official scoring, commit abc1234)"
        assert fig_eval_floor.wall("old") == "not recorded"
    finally:
        figures.result.cache_clear()
