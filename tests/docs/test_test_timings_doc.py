"""docs/testing.md's timing tables are rendered from their committed result files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "test_timings.py"


def _render(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "render", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=False,
    )


def test_the_doc_matches_its_result_files() -> None:
    r = _render("--check")
    assert r.returncode == 0, r.stderr


def test_a_changed_figure_is_caught(tmp_path: Path, monkeypatch) -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import test_timings as tt
    finally:
        sys.path.pop(0)
    doc = tmp_path / "testing.md"
    results = tmp_path / "results"
    results.mkdir()
    run = {
        "label": "x", "caches": "empty", "command": "make test", "commit": "abc", "date": "d",
        "machine": "2 cores", "note": "",
        "setup_steps": [{"step": "install", "seconds": 60.0, "rc": 0}],
        "tests": {"count": 2, "without_real_model_s": 10.0, "real_model_s": 50.0},
        "slowest": [{"test": "t::a", "seconds": 50.0, "real_model": True, "outcome": "passed"}],
        "make_test_wall_s": 600.0,
    }  # fmt: skip
    (results / "test_timings_x.json").write_text(json.dumps(run))
    doc.write_text(f"intro\n{tt.BEGIN.format(label='x')}\n{tt.END.format(label='x')}\nend\n")
    monkeypatch.setattr(tt, "DOC", doc)
    monkeypatch.setattr(tt, "RESULTS", results)
    assert tt.render(check=True) == 1  # empty table: stale
    assert tt.render(check=False) == 0
    assert "| install | 60 s | 0 |" in doc.read_text() and tt.render(check=True) == 0
    run["setup_steps"][0]["seconds"] = 61.0
    (results / "test_timings_x.json").write_text(json.dumps(run))
    assert tt.render(check=True) == 1
