"""Expert review of the extracted triplets through a CSV file (VectorGraphRAG section 3.2).

The loop: ``write_review_csv(store, "triplets.csv")``; a domain expert opens it in a spreadsheet
and fixes, deletes or adds rows; ``import_review_csv("triplets.csv", fresh_store)`` loads the
reviewed rows. Import only adds: to get exactly the reviewed graph, import into a new (empty)
store, not into the one the CSV was written from.

Format: UTF-8 (a byte-order mark, as some spreadsheets write, is accepted on import), comma
separated, csv-module quoting, header ``subject,predicate,object,source_id,model`` (on import the
three-column header ``subject,predicate,object`` is also accepted; header names are matched
case-insensitively). Each row is checked: as many cells as the header (trailing empty cells
beyond it are ignored) and non-empty subject, predicate and object. A bad row is rejected with
its line number (the physical line it starts on; the header is line 1) and the reason; the other
rows load. Blank rows are skipped.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biorag.errors import InputFormatError
from biorag.kg.export import iter_source
from biorag.kg.models import Triplet
from biorag.kg.stores.interfaces import KGStore
from biorag.util.files import atomic_writer

HEADER: tuple[str, ...] = ("subject", "predicate", "object", "source_id", "model")
MIN_HEADER = HEADER[:3]


@dataclass
class ImportReport:
    """What :func:`import_review_csv` did.

    ``added``: new triplets stored; ``duplicates``: valid rows already stored (or repeated in the
    file); ``rejected``: ``(line, reason)`` of each row that was not loaded, in file order.
    """

    added: int = 0
    duplicates: int = 0
    rejected: list[tuple[int, str]] = field(default_factory=list)

    def summary(self) -> str:
        """One line for a CLI: counts and the first rejected rows."""
        text = f"{self.added} added, {self.duplicates} duplicates, {len(self.rejected)} rejected"
        if self.rejected:
            shown = "; ".join(f"line {line}: {why}" for line, why in self.rejected[:5])
            text += f" ({shown}{'; ...' if len(self.rejected) > 5 else ''})"
        return text


def write_review_csv(store_or_triplets: Any, path: str | Path) -> Path:
    """Write every triplet (of a store, or an iterable of triplets) to a review CSV, atomically."""
    path = Path(path)
    with atomic_writer(path, newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(HEADER)
        for t in iter_source(store_or_triplets):
            writer.writerow([t.subject, t.predicate, t.object, t.source_id, t.model])
    return path


def _check_header(path: Path, header: list[str] | None) -> tuple[str, ...]:
    expected = ",".join(HEADER)
    if header is None:
        raise InputFormatError(f"{path} is empty: a review CSV starts with the header {expected}")
    names = tuple(h.strip().lower() for h in header)
    while names and not names[-1]:  # trailing empty header cells, as spreadsheets may add
        names = names[:-1]
    if names not in (HEADER, MIN_HEADER):
        raise InputFormatError(
            f"{path}: the first line must be the header {expected} "
            f"(or {','.join(MIN_HEADER)}), found {','.join(header)!r}"
        )
    return names


def _parse_row(row: list[str], columns: tuple[str, ...]) -> tuple[Triplet | None, str]:
    cells = list(row)
    while len(cells) > len(columns) and not cells[-1].strip():
        cells.pop()
    if len(cells) != len(columns):
        return None, f"expected {len(columns)} columns ({','.join(columns)}), found {len(cells)}"
    values = dict(zip(columns, (c.strip() for c in cells), strict=True))
    t = Triplet(
        subject=values["subject"],
        predicate=values["predicate"],
        object=values["object"],
        source_id=values.get("source_id", ""),
        model=values.get("model", ""),
    )
    problem = t.problem()
    return (None, problem) if problem else (t, "")


def import_review_csv(path: str | Path, store: KGStore) -> ImportReport:
    """Load the valid rows of a reviewed CSV into ``store``; report the rejected ones by line.

    A missing file, a wrong or missing header, text that is not UTF-8 or broken CSV quoting is an
    :class:`~biorag.errors.InputFormatError` naming the file (nothing is loaded then).
    """
    path = Path(path)
    report = ImportReport()
    loaded: list[tuple[int, Triplet]] = []
    try:
        with path.open(encoding="utf-8-sig", newline="") as fh:
            reader = csv.reader(fh)
            columns = _check_header(path, next(reader, None))
            start = reader.line_num + 1
            for row in reader:
                line, start = start, reader.line_num + 1
                if not any(cell.strip() for cell in row):
                    continue
                triplet, reason = _parse_row(row, columns)
                if triplet is None:
                    report.rejected.append((line, reason))
                else:
                    loaded.append((line, triplet))
    except FileNotFoundError as e:
        raise InputFormatError(f"review CSV {path} does not exist") from e
    except UnicodeDecodeError as e:
        raise InputFormatError(f"{path} is not UTF-8 text ({e}); save it as CSV UTF-8") from e
    except csv.Error as e:
        raise InputFormatError(f"{path}, line {reader.line_num}: malformed CSV: {e}") from e
    added = store.add_triplets(t for _, t in loaded)
    report.added, report.duplicates = added.added, added.duplicates
    report.rejected.extend((loaded[i][0], why) for i, why in added.invalid)
    report.rejected.sort()
    return report
