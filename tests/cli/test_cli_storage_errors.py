"""A full disk or a read-only output directory is one line naming what to do, not a traceback
(what the command wrote before is written atomically and stays usable: bench_reliability.py)."""

from __future__ import annotations

import errno
import sqlite3

import pytest
import typer

from biorag.cli.common import handle_errors, storage_problem


def run(exc: BaseException) -> None:
    @handle_errors
    def command() -> None:
        raise exc

    command()


@pytest.mark.parametrize(
    ("exc", "words"),
    [
        (OSError(errno.ENOSPC, "No space left on device", "idx/corpus.sqlite"), "disk is full"),
        (sqlite3.OperationalError("database or disk is full"), "disk is full"),
        (OSError(errno.EROFS, "Read-only file system", "idx/manifest.json"), "read-only"),
        (sqlite3.OperationalError("attempt to write a readonly database"), "read-only"),
    ],
)
def test_storage_errors_are_one_line(exc, words, capsys):
    with pytest.raises(typer.Exit) as info:
        run(exc)
    err = capsys.readouterr().err.strip()
    assert info.value.exit_code == 2 and err.startswith("error:") and "\n" not in err
    assert words in err


def test_other_errors_are_not_taken_for_storage_ones():
    assert storage_problem(OSError(errno.ENOENT, "No such file")) is None
    with pytest.raises(sqlite3.OperationalError):
        run(sqlite3.OperationalError("no such table: chunks"))
