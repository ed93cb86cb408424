"""Atomic writes, the one way biorag writes a file or directory: a reader never sees a
half-written one, and an interrupted write leaves the previous one in place."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any


@contextmanager
def atomic_writer(
    path: str | Path, *, binary: bool = False, newline: str | None = None
) -> Iterator[IO[Any]]:
    """Open a temporary file beside ``path``; when the block ends without an error, fsync it
    and rename it over ``path`` (readable by all: mkstemp makes it 0600). On an error the
    temporary file is removed and ``path`` is left as it was.

    Text mode is UTF-8 (``newline=""`` for the csv module); ``binary=True`` gives bytes.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        fh = (
            os.fdopen(fd, "wb") if binary else os.fdopen(fd, "w", encoding="utf-8", newline=newline)
        )
        with fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through :func:`atomic_writer`."""
    with atomic_writer(path) as fh:
        fh.write(text)


def write_json_atomic(path: str | Path, data: Any) -> None:
    write_text_atomic(path, json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def write_dir_atomically(target: str | Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_dir)`` on a fresh sibling directory, then swap it in as ``target``.

    A reader sees either the old complete directory or the new complete one: the new one is
    renamed into place (an old one is first renamed aside, then deleted). Its files are
    fsynced before the rename and the parent after it, so a commit point written next (an
    index's ``segments.json``) never names a directory a power cut could leave empty. On an
    error the temporary directory is removed and ``target`` is left as it was.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        write(tmp)
        _fsync_tree(tmp)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    old: Path | None = None
    if target.exists():
        old = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".old", dir=target.parent))
        os.replace(target, old / "x")
    os.replace(tmp, target)
    _fsync_dir(target.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return target


def _fsync_dir(path: Path) -> None:
    """Make a directory's entries durable (no-op where directories cannot be opened)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_tree(root: Path) -> None:
    """fsync every file under ``root``, then every directory, deepest first."""
    dirs = [root]
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames:
            with open(os.path.join(dirpath, name), "rb") as fh:
                os.fsync(fh.fileno())
        dirs += [Path(dirpath) / d for d in dirnames]
    for d in reversed(dirs):
        _fsync_dir(d)
