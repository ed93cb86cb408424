"""What a knowledge graph was built from: question ids and content hashes, for leakage checks.

A KG built from QA pairs (``biorag kg build --format medmcqa|mirage|jsonl``) carries their
answers. ``DIR/provenance.json`` records, over every build into ``DIR``:

* ``ids``: the source ids of the units read (question ids, record ids);
* ``question_hashes``: :func:`text_hash` of each question;
* ``pair_hashes``: :func:`text_hash` of each question together with its correct answer;
* ``builds``: which file, format and half each build read (and how many source questions it
  recorded).

Hashes, so this file stays small. The source questions' texts, which the paraphrase check needs
(a hash matches a word-for-word repeat only), are kept beside it in
``DIR/source_questions.jsonl`` (``{"id", "question", "answer"}`` per line, the union over
builds). ``biorag eval`` compares the questions
it scores with both (:mod:`biorag.eval.run.leakage`). A KG whose builds predate that file has
``questions=None`` (or ``questions_complete=False`` when only some builds recorded theirs):
its paraphrases are not checked, and the eval says so. A KG built before ``provenance.json``
existed is read through its store: the distinct ``source_id`` of its triplets (ids only, marked
``complete=False``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from biorag.errors import BioragError
from biorag.kg.directory import require_kg
from biorag.kg.stores.flat_sqlite import SQLiteKGStore
from biorag.util.files import write_json_atomic, write_text_atomic

__all__ = [
    "PROVENANCE_FILE",
    "QUESTIONS_FILE",
    "Provenance",
    "load_provenance",
    "record_provenance",
    "text_hash",
]

PROVENANCE_FILE = "provenance.json"
QUESTIONS_FILE = "source_questions.jsonl"
FORMAT = 1
_NON_WORD = re.compile(r"[^0-9a-z]+")


def text_hash(*parts: str) -> str:
    """A 16-hex-digit hash of ``parts``, each lower-cased with runs of anything but letters and
    digits made one space (so spacing, case and punctuation do not hide a copy)."""
    norm = "\x1f".join(_NON_WORD.sub(" ", p.lower()).strip() for p in parts)
    return hashlib.sha256(norm.encode("utf-8")).hexdigest()[:16]


@dataclass
class Provenance:
    """The ids and hashes a KG was built from; ``complete`` is False when only ids are known."""

    ids: set[str] = field(default_factory=set)
    question_hashes: set[str] = field(default_factory=set)
    pair_hashes: set[str] = field(default_factory=set)
    builds: list[dict[str, Any]] = field(default_factory=list)
    complete: bool = True
    #: ``(id, question, answer)`` of the source questions; None when no build recorded them
    questions: list[tuple[str, str, str]] | None = None
    #: False when some builds predate the recorded question texts (their paraphrases unseen)
    questions_complete: bool = False

    def __len__(self) -> int:
        return len(self.ids)


def record_provenance(
    directory: str | Path,
    pairs: Iterable[Any],
    other_ids: Iterable[str],
    build: dict[str, Any],
) -> Path:
    """Add ``pairs`` (objects with ``id``, ``question``, ``answer``) and ``other_ids`` (units
    without a question: triplet records, paragraphs) to ``DIR/provenance.json``."""
    d = Path(directory)
    prov = _read(d / PROVENANCE_FILE) if (d / PROVENANCE_FILE).is_file() else Provenance()
    questions = dict.fromkeys(_read_questions(d / QUESTIONS_FILE) or [])
    pairs = list(pairs)
    for p in pairs:
        prov.ids.add(str(p.id))
        prov.question_hashes.add(text_hash(p.question))
        prov.pair_hashes.add(text_hash(p.question, p.answer))
        questions[(str(p.id), str(p.question), str(p.answer or ""))] = None
    prov.ids.update(str(i) for i in other_ids)
    at = datetime.now(UTC).isoformat(timespec="seconds")
    prov.builds.append({**build, "at": at, "questions": len(pairs)})
    lines = (
        json.dumps({"id": i, "question": q, "answer": a}, ensure_ascii=False) + "\n"
        for i, q, a in questions
    )
    write_text_atomic(d / QUESTIONS_FILE, "".join(lines))  # before provenance.json names it
    path = d / PROVENANCE_FILE
    write_json_atomic(
        path,
        {
            "format": FORMAT,
            "builds": prov.builds,
            "ids": sorted(prov.ids),
            "question_hashes": sorted(prov.question_hashes),
            "pair_hashes": sorted(prov.pair_hashes),
            "questions_file": QUESTIONS_FILE,
        },
    )
    return path


def _read_questions(path: Path) -> list[tuple[str, str, str]] | None:
    """The ``(id, question, answer)`` rows of ``source_questions.jsonl`` (None without the
    file)."""
    if not path.is_file():
        return None
    fix = (
        "delete it and provenance.json and rebuild the KG (biorag kg build) so it records what "
        "it was built from again"
    )
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as e:
        raise BioragError(f"{path}: unreadable ({e}); {fix}") from None
    rows: list[tuple[str, str, str]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            rows.append((str(rec["id"]), str(rec["question"]), str(rec.get("answer") or "")))
        except (ValueError, KeyError, TypeError) as e:
            raise BioragError(
                f"{path}: line {n} is not an {{id, question}} record ({e}); {fix}"
            ) from None
    return rows


def _read(path: Path) -> Provenance:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise BioragError(
            f"{path}: unreadable ({e}); delete it and rebuild the KG (biorag kg build) so it "
            "records what it was built from again"
        ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise BioragError(f"{path}: not a biorag provenance file (format {FORMAT}); rebuild the KG")
    builds = list(data.get("builds") or [])
    questions = (
        _read_questions(path.parent / QUESTIONS_FILE) if data.get("questions_file") else None
    )
    return Provenance(
        ids={str(i) for i in data.get("ids") or []},
        question_hashes=set(data.get("question_hashes") or []),
        pair_hashes=set(data.get("pair_hashes") or []),
        builds=builds,
        questions=questions,
        questions_complete=questions is not None and all("questions" in b for b in builds),
    )


def load_provenance(directory: str | Path) -> Provenance:
    """What the KG in ``directory`` was built from (see the module docstring)."""
    d = Path(directory)
    if (d / PROVENANCE_FILE).is_file():
        return _read(d / PROVENANCE_FILE)
    store = SQLiteKGStore(require_kg(d))  # open_store's sqlite backend, with its .db
    try:
        ids = {str(r[0]) for r in store.db.execute("SELECT DISTINCT source_id FROM triplets")}
    finally:
        store.close()
    return Provenance(ids={i for i in ids if i}, complete=False)
