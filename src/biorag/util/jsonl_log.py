"""Append-only JSON-lines logs: records written whole (a line each, flushed and fsynced) under
an exclusive lock, and read back with a line cut off by a kill dropped (and, with ``repair``,
truncated away so appends start on a clean line). An evaluation's ``predictions.jsonl`` and
``judgments.jsonl`` (:mod:`biorag.eval.run.records`) and the batch jobs' checkpoints
(:mod:`biorag.executor.checkpoint`) are such logs."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import IO, Any

from biorag.errors import BioragError

log = logging.getLogger(__name__)


def read_jsonl_records(
    path: str | Path,
    required: tuple[str, ...],
    *,
    what: str,
    redo: str,
    repair: bool = False,
) -> list[dict[str, Any]]:
    """All complete records (JSON objects with the ``required`` keys) of an append-only log.

    A last line without its newline was cut off mid-write: it is dropped with a warning (ending
    with ``redo``, what happens to it) and, with ``repair=True``, cut from the file so appends
    start on a clean line. A line before the last that is not such a record means the file was
    edited or two runs wrote to it: that is an error naming the line (``what`` names the kind).
    """
    path = Path(path)
    if not path.is_file():
        return []
    data = path.read_bytes()
    records: list[dict[str, Any]] = []
    good_end = 0
    pos = 0
    lineno = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        lineno += 1
        if nl < 0:
            log.warning(
                "%s: dropping a truncated last line (%d bytes, line %d) left by an interrupted "
                "run; %s",
                path,
                len(data) - pos,
                lineno,
                redo,
            )
            break
        line = data[pos:nl].strip()
        if line:
            try:
                rec = json.loads(line)
            except ValueError:
                rec = None
            if not isinstance(rec, dict) or any(k not in rec for k in required):
                raise BioragError(
                    f"{path} line {lineno} is not {what}; the file was edited or "
                    "written by two runs at once: delete that line, or use a new output directory",
                    param="out",
                )
            records.append(rec)
        pos = nl + 1
        good_end = pos
    if repair and good_end < len(data):
        with open(path, "r+b") as fh:
            fh.truncate(good_end)
            fh.flush()
            os.fsync(fh.fileno())
    return records


def open_locked(path: Path, busy: str) -> IO[bytes]:
    """``path`` opened for appending with an exclusive lock (where the platform has ``fcntl``;
    the OS drops it when the process dies); :class:`BioragError` ``busy`` when another process
    holds it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fh: IO[bytes] = open(path, "ab")  # noqa: SIM115 - the caller closes it
    try:
        import fcntl

        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except ImportError:  # pragma: no cover - not POSIX
        pass
    except OSError:
        fh.close()
        raise BioragError(busy) from None
    return fh


class RecordWriter:
    """Appends records to a JSONL log: one whole line per record, flushed and fsynced.

    Holds an exclusive lock on the file while open (where the platform has ``fcntl``), so two
    runs cannot write into the same directory at once.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._fh = open_locked(
            self.path, f"another run is writing {self.path}; wait for it or use another directory"
        )

    def append(self, record: dict[str, Any]) -> None:
        self.append_many([record])

    def append_many(self, records: list[dict[str, Any]]) -> None:
        """Append ``records`` as whole lines, then flush and fsync once."""
        lines = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in records)
        self._fh.write(lines.encode("utf-8"))
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
