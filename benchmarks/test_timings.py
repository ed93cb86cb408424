"""Where `make test`'s time goes: records a run's timings as a result file; the tables of
docs/testing.md are rendered from the committed result files (never typed by hand) by
benchmarks/figures/timing_tables.py.

    # after `make test` (scripts/test.sh wrote .biorag/test-report/durations.json):
    python benchmarks/test_timings.py record --label fresh --caches empty \\
        --command "cd /work && git clone -q main c && cd c && CI=true bash .ci/run"
    # a run stopped before pytest's report (its tmp_path folders' birth times, steps timed by hand):
    python benchmarks/test_timings.py record --label before --caches empty \\
        --timeline births.txt --real-from EPOCH --end EPOCH --steps steps.txt --command "..."
    python benchmarks/render_docs.py                  # renders docs/testing.md's tables

Result files: benchmarks/results/test_timings_<label>.json (setup steps, totals, the 30 slowest
tests), rendered by benchmarks/figures/fig_testing.py (through figures.timing_tables.table).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
DOC = REPO / "docs" / "testing.md"
KEEP = 30


def _commit() -> str:
    r = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    )
    return r.stdout.strip() or "unknown"


def _from_timeline(path: Path, real_from: int, end: int) -> dict[str, Any]:
    """Start-to-next-start times from ``EPOCH NAME`` lines: the birth times of the pytest
    ``tmp_path`` folders of a run that was stopped before pytest wrote its report (a test's
    time then includes the fixtures started after it began; tests without ``tmp_path`` are
    charged to the one before them). ``real_from``: when the first real-model test began."""
    rows = []
    lines = [x.split(maxsplit=1) for x in path.read_text().splitlines() if x.strip()]
    marks = [(int(t), n.strip()) for t, n in lines]
    for (t, name), (t_next, _) in zip(marks, [*marks[1:], (end, "")], strict=True):
        if name.endswith("current"):
            continue
        rows.append(
            {
                "test": f"tmp_path {name} (from +{t - marks[0][0]} s)",
                "seconds": float(t_next - t),
                "real_model": t >= real_from,
                "outcome": None,
            }
        )
    rows.sort(key=lambda r: -r["seconds"])
    real = sum(r["seconds"] for r in rows if r["real_model"])
    rest = sum(r["seconds"] for r in rows if not r["real_model"])
    return {
        "tests": {"count": len(rows), "without_real_model_s": rest, "real_model_s": real},
        "rows": "tmp_path folders",
        "slowest": rows,
    }


def _steps_txt(path: Path) -> list[dict[str, Any]]:
    """``NAME SECONDS rc=N`` lines (a hand-timed run of the old `make test`)."""
    steps = []
    for line in path.read_text().splitlines():
        m = re.match(r"(\S+) (\d+) rc=(\d+)$", line.strip())
        if m:
            steps.append({"step": m[1], "seconds": float(m[2]), "rc": int(m[3])})
    return steps


def record(args: argparse.Namespace) -> None:
    if args.timeline:
        data = _from_timeline(Path(args.timeline), args.real_from, args.end)
        data["setup_steps"] = _steps_txt(Path(args.steps)) if args.steps else []
        if args.wall:
            data["make_test_wall_s"] = args.wall
    else:
        data = json.loads(Path(args.durations).read_text())
    data["slowest"] = data["slowest"][:KEEP]
    out = {
        "label": args.label,
        "caches": args.caches,
        "command": args.command,
        "commit": args.commit or _commit(),
        "date": dt.date.today().isoformat(),
        "machine": args.machine,
        "note": args.note,
        **data,
    }
    path = RESULTS / f"test_timings_{args.label}.json"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    print(path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record", help="write benchmarks/results/test_timings_<label>.json")
    rec.add_argument("--label", required=True)
    rec.add_argument("--caches", choices=["empty", "warm"], required=True)
    rec.add_argument("--command", required=True, help="the command that ran the tests")
    rec.add_argument("--durations", default=".biorag/test-report/durations.json")
    rec.add_argument("--timeline", help="'EPOCH NAME' birth times of a stopped run's tmp_path")
    rec.add_argument("--real-from", type=int, default=0, help="with --timeline: epoch")
    rec.add_argument("--end", type=int, default=0, help="with --timeline: when it was stopped")
    rec.add_argument("--steps", help="with --timeline: 'NAME SECONDS rc=N' lines")
    rec.add_argument("--wall", type=float, help="with --timeline: the whole run's wall seconds")
    rec.add_argument("--commit", help="the commit that ran (default: HEAD)")
    rec.add_argument("--machine", default="2 cores, 24 GiB")
    rec.add_argument("--note", default="")
    args = ap.parse_args()
    record(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
