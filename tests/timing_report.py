"""The cost of the suite, shown at the end of every run (a pytest plugin of tests/conftest.py).

- The order: tests that need no real model first; then the real-model tests that need no built
  server (SmolLM2 in process); then those that start llama-server or llama-cpp-python's server,
  which ``make test`` builds in the background meanwhile (scripts/test.sh).
- The report: under ``make test``, the setup steps' wall times (``BIORAG_TEST_SETUP_TIMES``,
  written by scripts/test.sh); always, the 15 slowest tests with setup, call and teardown added
  up (a session fixture's start is charged to the first test that asks for it), and the totals
  of the two parts of the suite. ``BIORAG_TEST_DURATIONS`` names a JSON file that gets them all,
  for benchmarks/test_timings.py.

Nothing here asserts a time: machines are noisy. The table is there so a slow addition shows on
the developer's machine before it shows in CI.
"""

from __future__ import annotations

import json
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

SLOWEST = 15
#: fixtures that start a server built by scripts/build-llama-server.sh or
#: scripts/build-llama-cpp-python.sh
BUILT_SERVER_FIXTURES = frozenset({"llama_bin", "lcp_python"})

_durations: dict[str, float] = defaultdict(float)
_outcomes: dict[str, str] = {}
_real: set[str] = set()
_started = time.monotonic()


def tier(item: pytest.Item) -> int:
    """0: no real model; 1: a real model in process; 2: a server that ``make test`` builds."""
    if BUILT_SERVER_FIXTURES & set(getattr(item, "fixturenames", ())):
        return 2
    if item.get_closest_marker("real_llm") is not None or "real_llm" in item.nodeid:
        return 1
    return 0


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if tier(item):
            _real.add(item.nodeid)
    items.sort(key=tier)  # stable: the order within each tier is kept


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _durations[report.nodeid] += report.duration
    if report.when == "call" or report.outcome != "passed":
        _outcomes[report.nodeid] = report.outcome


def _setup_steps() -> list[dict[str, Any]]:
    path = os.environ.get("BIORAG_TEST_SETUP_TIMES")
    if not path or not Path(path).is_file():
        return []
    steps = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        try:
            steps.append(json.loads(line))
        except ValueError:
            continue
    return steps


def summary() -> dict[str, Any]:
    """What the report shows, as data."""
    steps = _setup_steps()
    real = sum(s for n, s in _durations.items() if n in _real)
    rest = sum(s for n, s in _durations.items() if n not in _real)
    ranked = sorted(_durations.items(), key=lambda kv: -kv[1])
    out: dict[str, Any] = {
        "setup_steps": steps,
        "tests": {
            "count": len(_durations),
            "without_real_model_s": round(rest, 1),
            "real_model_s": round(real, 1),
            "pytest_wall_s": round(time.monotonic() - _started, 1),
        },
        "slowest": [
            {
                "test": n,
                "seconds": round(s, 2),
                "real_model": n in _real,
                "outcome": _outcomes.get(n),
            }
            for n, s in ranked
        ],
    }
    started = os.environ.get("BIORAG_TEST_STARTED")
    if started and started.isdigit():
        out["make_test_wall_s"] = round(time.time() - int(started), 1)
    return out


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _durations:  # nothing ran (--collect-only, or every test deselected)
        return
    data = summary()
    tr = terminalreporter
    if data["setup_steps"]:
        tr.write_sep("-", "make test: setup steps (wall seconds; background steps overlap)")
        for s in data["setup_steps"]:
            failed = "" if s.get("rc", 0) == 0 else f"  (failed: exit {s['rc']})"
            tr.write_line(
                f"{s['seconds']:8.1f} s  {s['step']:<30} from +{s.get('started_s', 0)} s{failed}"
            )
    tests = data["tests"]
    tr.write_sep("-", f"the {SLOWEST} slowest tests (setup + call + teardown)")
    for row in data["slowest"][:SLOWEST]:
        mark = "  [real model]" if row["real_model"] else ""
        tr.write_line(f"{row['seconds']:8.1f} s  {row['test']}{mark}")
    tr.write_line(
        f"tests: {tests['count']}; without a real model {tests['without_real_model_s']:.0f} s, "
        f"real-model {tests['real_model_s']:.0f} s; pytest {tests['pytest_wall_s']:.0f} s"
        + (
            f"; make test so far {data['make_test_wall_s']:.0f} s"
            if "make_test_wall_s" in data
            else ""
        )
    )
    target = os.environ.get("BIORAG_TEST_DURATIONS")
    if target:
        path = Path(target)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        tmp.replace(path)
