"""The markdown of one recorded `make test` run (``benchmarks/results/test_timings_<label>.json``,
written by ``benchmarks/test_timings.py record``): rendered into docs/testing.md by
``fig_testing.py``. A plain module, not a ``fig_*`` one: it registers no figure."""

from __future__ import annotations

from typing import Any


def _minutes(s: float) -> str:
    return f"{s / 60:.1f} min"


def table(run: dict[str, Any]) -> str:
    """The markdown of one run: its setup steps, totals and slowest tests."""
    lines = [
        f"Run at {run['commit']} on {run['date']} ({run['machine']}; caches {run['caches']}):"
        f" `{run['command']}`" + (f". {run['note']}" if run.get("note") else ""),
        "",
        "| setup step | wall | exit |",
        "|---|---:|---:|",
    ]
    for s in run["setup_steps"]:
        start = f" (from +{s['started_s']} s)" if "started_s" in s else ""
        lines.append(f"| {s['step']}{start} | {s['seconds']:.0f} s | {s.get('rc', 0)} |")
    t = run["tests"]
    lines += [
        "",
        ("tmp_path folders" if run.get("rows") else "Tests")
        + f": {t['count']}; without a real model {_minutes(t['without_real_model_s'])},"
        f" with a real model {_minutes(t['real_model_s'])}"
        + (f"; pytest wall {_minutes(t['pytest_wall_s'])}" if "pytest_wall_s" in t else "")
        + (
            f"; **`make test` wall {_minutes(run['make_test_wall_s'])}**"
            if run.get("make_test_wall_s")
            else ""
        )
        + ".",
        "",
        f"| the {len(run['slowest'])} slowest {run.get('rows', 'tests')} | seconds | real model |",
        "|---|---:|:-:|",
    ]
    for r in run["slowest"]:
        name = r["test"].replace("|", "\\|")
        flag = "yes" if r["real_model"] else ""
        lines.append(f"| `{name}` | {r['seconds']:.1f} | {flag} |")
    return "\n".join(lines)
