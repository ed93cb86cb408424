"""metrics.json records how it was scored: the scoring, biorag's commit and the command."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys

import pytest

from biorag.corpus.datasets.base import QAItem
from biorag.eval.run import scoring
from biorag.eval.run.scoring import command_line, run_metrics, source_commit


def _item() -> QAItem:
    return QAItem(id="q1", dataset="pubmedqa", question="Does it work?", question_type="yesno",
                  options={"A": "yes", "B": "no", "C": "maybe"}, gold="A")  # fmt: skip


def _record() -> dict:
    return {"method": "closed-book", "question_id": "q1", "prediction": "A", "error": None,
            "seconds": 0.1, "accounting": {}}  # fmt: skip


@pytest.mark.parametrize("mode", ["official", "biorag"])
def test_metrics_record_the_scoring_commit_and_command(mode, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/venv/bin/biorag", "eval", "--out", "run dir"])
    m = run_metrics("pubmedqa", "test", None, [_item()], [_record()], ["closed-book"],
                    scoring=mode)  # fmt: skip
    assert m["scoring"] == mode
    assert m["commit"] is None or re.fullmatch(r"[0-9a-f]{7,}(-dirty)?", m["commit"])
    assert m["command"] == "biorag eval --out 'run dir'"


def test_the_command_is_written_without_credentials(monkeypatch):
    monkeypatch.setattr(sys, "argv", [
        "/venv/bin/biorag", "eval", "--out", "run", "--llm-base-url",
        "http://alice:s3cret@llm.lan:8080/v1", "--judge-url=https://bob:pw@judge.lan/v1",
        "--method-options", '{"iprar": {"reasoning_model": {"base_url": '
        '"http://carol:hunter2@r.lan/v1", "api_key": "sk-123456"}, "max_tokens": 64}}',
        "--api-token", "tok-987654", "--max-tokens", "512",
    ])  # fmt: skip
    m = run_metrics("pubmedqa", "test", None, [_item()], [_record()], ["closed-book"])
    for secret in ("alice", "s3cret", "bob", ":pw@", "carol", "hunter2", "sk-123456", "tok-987654"):
        assert secret not in m["command"], secret
    argv = shlex.split(m["command"])
    options = json.loads(argv[8])
    assert argv[:8] + argv[9:] == [
        "biorag", "eval", "--out", "run", "--llm-base-url", "http://***@llm.lan:8080/v1",
        "--judge-url=https://***@judge.lan/v1", "--method-options", "--api-token", "***",
        "--max-tokens", "512",
    ]  # fmt: skip
    assert options == {
        "iprar": {
            "reasoning_model": {"base_url": "http://***@r.lan/v1", "api_key": "***"},
            "max_tokens": 64,
        }
    }


def test_the_commit_is_this_checkouts():
    src = scoring.Path(scoring.__file__).parent
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, cwd=src, check=False)  # fmt: skip
    if head.returncode != 0:
        pytest.skip("biorag does not run from a git checkout here")
    got = source_commit()
    assert got is not None and got.removesuffix("-dirty") == head.stdout.strip()


def _git(status: str):
    """A git whose checkout is at abc1234 and whose ``status --porcelain`` prints ``status``,
    its untracked files (``??``) only when they are asked for, as git does."""

    def run(args, **kwargs):
        out = {"rev-parse": "abc1234\n", "ls-files": "__init__.py\n"}.get(args[1], "")
        if args[1] == "status":
            hidden = "--untracked-files=no" in args
            out = "".join(ln for ln in status.splitlines(True) if not (hidden and ln[:2] == "??"))
        return subprocess.CompletedProcess(args, 0, stdout=out, stderr="")

    return run


@pytest.mark.parametrize(
    ("status", "commit"),
    [
        ("", "abc1234"),
        (" M eval/run/scoring.py\n", "abc1234-dirty"),
        ("?? eval/run/new_module.py\n", "abc1234-dirty"),
    ],
    ids=["clean", "changed", "untracked"],
)
def test_a_changed_or_untracked_source_is_dirty(monkeypatch, status, commit):
    source_commit.cache_clear()
    monkeypatch.setattr(scoring.subprocess, "run", _git(status))
    try:
        assert source_commit() == commit
        assert re.fullmatch(r"[0-9a-f]{7,}(-dirty)?", commit)
    finally:
        source_commit.cache_clear()


def test_no_git_no_commit(monkeypatch):
    def no_git(*args, **kwargs):
        raise FileNotFoundError("git")

    source_commit.cache_clear()
    monkeypatch.setattr(scoring.subprocess, "run", no_git)
    try:
        assert source_commit() is None
    finally:
        source_commit.cache_clear()


def test_no_argv_no_command(monkeypatch):
    monkeypatch.setattr(sys, "argv", [])
    assert command_line() is None
