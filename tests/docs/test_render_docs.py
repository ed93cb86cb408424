"""Every figure of the docs is rendered from a committed result file (benchmarks/figures/):
the docs as committed equal their re-rendering, a changed figure is caught, and a table typed
by hand in a measured doc is refused."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.docs.bench_imports import benchmarks_on_path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "render_docs.py"


@pytest.fixture
def rd(benchmarks_path: Path) -> Any:
    """``benchmarks/render_docs.py`` imported, with every figure module loaded (and all of it
    dropped from ``sys.path`` and ``sys.modules`` afterwards: ``benchmarks_path``)."""
    import figures
    import render_docs

    figures.load_all()
    return render_docs


def test_the_docs_equal_their_result_files() -> None:
    r = subprocess.run([sys.executable, str(SCRIPT), "--check", "--json"], capture_output=True,
                       text=True, cwd=REPO, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["ok"], report
    assert report["rendered"] > 0


def _setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rd: Any) -> tuple[Path, Path]:
    import figures

    results = tmp_path / "results"
    results.mkdir()
    (results / "x.json").write_text(json.dumps({"rows": [{"m": "bm25", "map": 0.7371}]}))
    monkeypatch.setattr(figures, "RESULTS", results)
    figures.result.cache_clear()

    def _x() -> str:
        rows = figures.result("x.json")["rows"]
        return figures.table(["method", "MAP"], [[r["m"], figures.num(r["map"])] for r in rows])

    monkeypatch.setitem(figures.FIGURES, "test-x", _x)
    doc = tmp_path / "docs" / "benchmarks.md"
    doc.parent.mkdir()
    monkeypatch.setattr(rd, "REPO", tmp_path)
    return doc, results


def test_a_changed_figure_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rd: Any
) -> None:
    import figures

    doc, results = _setup(tmp_path, monkeypatch, rd)
    doc.write_text("intro\n<!-- figure:test-x -->\n<!-- /figure:test-x -->\n"
                   "MAP <!--v x.json:rows/0/map|.2f--><!--/v--> end\n")  # fmt: skip
    assert not rd.run(check=True, docs=["docs/benchmarks.md"]).ok()  # empty: stale
    assert rd.run(check=False, docs=["docs/benchmarks.md"]).errors == []
    text = doc.read_text()
    assert "| bm25 | 0.737 |" in text
    assert "MAP <!--v x.json:rows/0/map|.2f-->0.74<!--/v--> end" in text
    assert rd.run(check=True, docs=["docs/benchmarks.md"]).ok()
    (results / "x.json").write_text(json.dumps({"rows": [{"m": "bm25", "map": 0.75}]}))
    figures.result.cache_clear()
    report = rd.run(check=True, docs=["docs/benchmarks.md"])
    assert report.changed == {
        "docs/benchmarks.md": ["figure:test-x", "v x.json:rows/0/map|.2f: '0.74' -> '0.75'"]
    }
    figures.result.cache_clear()


def test_a_hand_typed_table_or_a_missing_file_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rd: Any
) -> None:
    import figures

    doc, _ = _setup(tmp_path, monkeypatch, rd)
    doc.write_text("| a | b |\n|---|---|\n| 1 | 2 |\n\n<!-- not a figure: options -->\n"
                   "| option | meaning |\n|---|---|\n")  # fmt: skip
    report = rd.run(check=True, docs=["docs/benchmarks.md"])
    assert report.untracked_tables == ["docs/benchmarks.md:1: a table typed by hand: | a | b |"]
    doc.write_text("<!--v gone.json:a-->1<!--/v-->\n<!-- figure:nope -->\n<!-- /figure:nope -->\n")
    errors = rd.run(check=True, docs=["docs/benchmarks.md"]).errors
    assert any("gone.json is missing" in e for e in errors)
    assert any("no figure is registered as 'nope'" in e for e in errors)
    doc.write_text("<!-- figure:test-x -->\nno end\n")
    errors = rd.run(check=True, docs=["docs/benchmarks.md"]).errors
    assert errors == ["docs/benchmarks.md: figure:test-x is never closed (<!-- /figure:test-x -->)"]
    figures.result.cache_clear()


def test_importing_the_renderer_leaves_sys_path_and_modules_as_they_were() -> None:
    path = sys.path[:]
    with benchmarks_on_path():
        import figures
        import render_docs

        figures.load_all()
        assert render_docs.figures is figures and "figures.fig_scaling" in sys.modules
        # the figure modules import their helpers from figures/, not from the bench scripts
        assert not {"bench_llm_sizing", "test_timings", "_bench"} & set(sys.modules)
    assert sys.path == path
    assert not {"figures", "render_docs", "figures.fig_scaling"} & set(sys.modules)
