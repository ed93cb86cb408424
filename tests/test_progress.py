"""Progress: log lines when stderr is not a terminal, nothing with BIORAG_PROGRESS=0."""

from __future__ import annotations

import logging
import sys

import pytest

from biorag.util import progress as prog


def test_without_a_terminal_progress_is_logged_at_intervals(monkeypatch, caplog):
    monkeypatch.setenv("BIORAG_PROGRESS", "1")
    monkeypatch.setenv("BIORAG_PROGRESS_INTERVAL", "0")
    monkeypatch.setattr(prog, "_on_terminal", lambda: False)
    with caplog.at_level(logging.INFO, logger="biorag.progress"):
        assert list(prog.progress(range(4), "embed", unit="batch")) == [0, 1, 2, 3]
    lines = [r.getMessage() for r in caplog.records if r.name == "biorag.progress"]
    assert lines[0].startswith("embed: 1/4 batch (25%)") and "left" in lines[0]
    assert lines[-2].startswith("embed: 4/4 batch (100%)") and "left" not in lines[-2]
    assert lines[-1].endswith("(done)")


def test_short_steps_and_quiet_settings_log_nothing(monkeypatch, caplog):
    monkeypatch.setattr(prog, "_on_terminal", lambda: False)
    monkeypatch.setenv("BIORAG_PROGRESS", "1")
    monkeypatch.setenv("BIORAG_PROGRESS_INTERVAL", "3600")
    with caplog.at_level(logging.INFO, logger="biorag.progress"):
        bar = prog.progress_bar(10, "eval", unit="answer")
        bar.update(10)
        bar.close()
        monkeypatch.setenv("BIORAG_PROGRESS", "0")
        monkeypatch.setenv("BIORAG_PROGRESS_INTERVAL", "0")
        list(prog.progress([1, 2], "quiet"))
    assert [r for r in caplog.records if r.name == "biorag.progress"] == []


def test_a_bad_interval_falls_back_to_the_default(monkeypatch):
    monkeypatch.setenv("BIORAG_PROGRESS_INTERVAL", "soon")
    assert prog._interval_s() == prog.DEFAULT_INTERVAL_S


def test_observed_bars_report_to_the_callback_of_their_thread_only(monkeypatch):
    import threading

    from biorag.util.progress import observe_progress, progress, progress_bar

    monkeypatch.setenv("BIORAG_PROGRESS", "0")  # reported even when nothing is shown
    seen: list[tuple[str, int, int | None]] = []
    other: list[int] = []
    with observe_progress(lambda d, n, t: seen.append((d, n, t))):
        list(progress(range(3), "chunking"))
        thread = threading.Thread(target=lambda: other.append(len(list(progress([1], "x")))))
        thread.start()
        thread.join()
    assert seen == [("chunking", 0, 3), ("chunking", 1, 3), ("chunking", 2, 3), ("chunking", 3, 3)]
    progress_bar(5, "after").update(1)  # outside the block: no callback
    assert len(seen) == 4 and other == [1]


def test_an_observer_that_raises_stops_the_work():
    from biorag.util.progress import observe_progress, progress

    def stop(desc: str, done: int, total: int | None) -> None:
        if done == 2:
            raise KeyboardInterrupt

    got = []
    with pytest.raises(KeyboardInterrupt), observe_progress(stop):
        for x in progress(range(10), "work"):
            got.append(x)
    assert got == [0, 1]


def test_logging_follows_a_replaced_stderr(monkeypatch):
    import io
    import logging

    from biorag.util.progress import setup_logging

    first = io.StringIO()
    monkeypatch.setattr(sys, "stderr", first)
    setup_logging()
    first.close()  # as pytest closes a test's captured stream, or a shell closes a pipe
    second = io.StringIO()
    monkeypatch.setattr(sys, "stderr", second)
    logging.getLogger("biorag.serve").info("GET /v1/methods 200")
    assert "INFO biorag.serve: GET /v1/methods 200" in second.getvalue()
