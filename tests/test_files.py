"""Atomic writes: one helper module writes every file and directory biorag replaces."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from biorag.util.files import atomic_writer, write_dir_atomically, write_text_atomic

SRC = Path(__file__).resolve().parents[1] / "src" / "biorag"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out" / "report.json"
    write_text_atomic(target, "old\n")
    with pytest.raises(RuntimeError), atomic_writer(target) as fh:
        fh.write("half of the new")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "old\n"
    assert [p.name for p in target.parent.iterdir()] == ["report.json"]
    assert stat.S_IMODE(target.stat().st_mode) == 0o644  # readable by all, not mkstemp's 0600


def test_binary_and_csv_modes(tmp_path):
    with atomic_writer(tmp_path / "b.bin", binary=True) as fh:
        fh.write(b"\x00\x01")
    with atomic_writer(tmp_path / "t.csv", newline="") as fh:
        fh.write("a,b\r\n")
    assert (tmp_path / "b.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "t.csv").read_bytes() == b"a,b\r\n"


def test_a_failed_directory_write_leaves_the_old_directory(tmp_path):
    target = tmp_path / "index"
    write_dir_atomically(target, lambda d: (d / "a").write_text("1"))

    def broken(d: Path) -> None:
        (d / "a").write_text("2")
        raise OSError("disk full")

    with pytest.raises(OSError):
        write_dir_atomically(target, broken)
    assert (target / "a").read_text() == "1" and [p.name for p in tmp_path.iterdir()] == ["index"]


def test_no_module_renames_files_into_place_by_itself():
    """Every temporary-file-and-rename lives in biorag.util.files."""
    pattern = re.compile(r"os\.replace\(|os\.rename\(|mkstemp\(|mkdtemp\(|shutil\.move\(")
    offenders = [
        f"{p.relative_to(SRC)}:{i}"
        for p in SRC.rglob("*.py")
        if p.name != "files.py"
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
        if pattern.search(line)
    ]
    assert offenders == []


def test_a_directory_written_atomically_is_synced_before_it_is_renamed(tmp_path, monkeypatch):
    import os

    from biorag.util import files

    synced: list[str] = []
    real = os.fsync

    def record(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real(fd)

    monkeypatch.setattr(files.os, "fsync", record)

    def write(tmp):
        (tmp / "sub").mkdir()
        (tmp / "a.npy").write_bytes(b"x")
        (tmp / "sub" / "b.json").write_text("{}")

    target = files.write_dir_atomically(tmp_path / "seg", write)
    names = [os.path.basename(p) for p in synced]
    assert {"a.npy", "b.json", "sub"} <= set(names)  # files and folders, under the temp name
    assert names[-1] == tmp_path.name  # then the parent, after the rename
    assert (target / "sub" / "b.json").read_text() == "{}"
