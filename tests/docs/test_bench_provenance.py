"""A benchmark's result names the commit of the biorag package that ran (benchmarks/_bench.py),
not the working directory's: a worktree's run with another checkout's biorag names that
checkout, ``-dirty`` where its package files differ from the commit."""

from __future__ import annotations

import subprocess
import sys
import types
from pathlib import Path

import pytest


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout.strip()  # fmt: skip


def test_provenance_names_the_commit_of_the_imported_biorag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, benchmarks_path: Path
) -> None:
    import _bench

    checkout = tmp_path / "other"
    (checkout / "src" / "biorag").mkdir(parents=True)
    init = checkout / "src" / "biorag" / "__init__.py"
    init.write_text("")
    (checkout / "README.md").write_text("x\n")
    _git(checkout, "init", "-q")
    _git(checkout, "add", "-A")
    _git(checkout, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    head = _git(checkout, "rev-parse", "--short", "HEAD")
    fake = types.ModuleType("biorag")
    fake.__file__ = str(init)
    monkeypatch.setitem(sys.modules, "biorag", fake)
    monkeypatch.chdir(tmp_path)  # not a checkout: the working directory plays no part

    assert _bench.provenance()["commit"] == head
    (checkout / "README.md").write_text("changed outside the package\n")
    assert _bench.biorag_commit() == head
    init.write_text("# changed\n")
    assert _bench.biorag_commit() == f"{head}-dirty"
    fake.__file__ = str(tmp_path / "site-packages" / "biorag" / "__init__.py")
    assert _bench.biorag_commit() == "unknown"
