"""What a load kept, refused and merged, told in full.

Every loader records the records it cannot use as :class:`SkippedRecord` (file, line, reason).
This module turns them into a report a person can act on: the count of each kind of problem,
the first few with their file and line, and every one of them written to a file named in the
message. It also refuses records over a size limit (by id) and finds duplicates:

- the same record twice (same source id, same title and text): kept once;
- one source id with different texts: every version kept, as separate documents;
- one text under several source ids: kept under each id (a snippet cited for two PMIDs).
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from biorag.corpus.models import Document, LoadReport, SkippedRecord, content_id
from biorag.util.files import write_text_atomic

#: Records with more characters than this (title + text) are refused: a few MB of text is far
#: beyond any article; such a record is a concatenated dump or a broken file. The setting is
#: ``corpus.max_record_chars``.
DEFAULT_MAX_RECORD_CHARS = 5_000_000
SKIPPED_FILE = "skipped.jsonl"
SHOW_FIRST = 5

_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NUMBER = re.compile(r"\d+")
_LOCATION = re.compile(
    r"^(?:line|record|question|item|entry|key|row|object|snippet)\b[^:]{0,80}:\s*(.+)$", re.S
)


def kind_of(reason: str) -> str:
    """The kind of problem a skip reason names: its head, quoted values and numbers generalized
    (``invalid JSON: Expecting value`` -> ``invalid JSON``; ``duplicate id 'x'`` -> ``duplicate
    id '…'``)."""
    located = _LOCATION.match(reason)
    if located:  # "line 7: field 'text' is empty": the kind is what follows the location
        reason = located.group(1)
    head = re.split(r"[:(;]", reason, maxsplit=1)[0].strip() or reason.strip()
    return _NUMBER.sub("N", _QUOTED.sub("'…'", head)) or "unknown"


@dataclass
class SkipSummary:
    """The skips of one load: how many, of which kinds, the first few, and where all are."""

    count: int = 0
    by_kind: dict[str, int] = field(default_factory=dict)
    first: list[str] = field(default_factory=list)
    file: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def lines(self) -> list[str]:
        """The report for a terminal: counts by kind, the first few, the file with the rest."""
        if not self.count:
            return []
        kinds = ", ".join(f"{k}: {n}" for k, n in self.by_kind.items())
        out = [f"skipped {self.count} record(s) ({kinds}); the first {len(self.first)}:"]
        out += [f"  {x}" for x in self.first]
        if self.file:
            out.append(f"  every skipped record, with its file and line: {self.file}")
        elif self.count > len(self.first):
            out.append(f"  ... and {self.count - len(self.first)} more")
        return out


def summarize_skips(
    skipped: Sequence[SkippedRecord], write_to: str | Path | None = None, first: int = SHOW_FIRST
) -> SkipSummary:
    """Count ``skipped`` by kind, keep the first few, and write all of them (JSON Lines of
    ``file``, ``line``, ``reason``) to ``write_to`` when given and there is something to write."""
    summary = SkipSummary(count=len(skipped))
    if not skipped:
        return summary
    counts = Counter(kind_of(s.reason) for s in skipped)
    summary.by_kind = dict(counts.most_common())
    summary.first = [f"{s.where()}: {s.reason}" for s in skipped[:first]]
    if write_to is not None:
        rows = (
            json.dumps({"file": s.file, "line": s.line, "reason": s.reason}, ensure_ascii=False)
            for s in skipped
        )
        write_text_atomic(write_to, "".join(r + "\n" for r in rows))
        summary.file = str(write_to)
    return summary


@dataclass
class Duplicates:
    """Duplicates found in one load, and what was done with them."""

    same_record: int = 0  # dropped: the record is loaded once
    same_id_other_text: int = 0  # source ids with several texts: each version kept
    same_text_other_id: int = 0  # texts under several source ids: kept under each
    examples: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def lines(self) -> list[str]:
        out = []
        if self.same_record:
            out.append(f"{self.same_record} record(s) appeared twice or more: each kept once")
        if self.same_id_other_text:
            out.append(
                f"{self.same_id_other_text} source id(s) carry different texts: every version "
                "kept as its own document (remove stale ones with `biorag index remove`)"
            )
        if self.same_text_other_id:
            out.append(
                f"{self.same_text_other_id} text(s) appear under several source ids: kept "
                "under each id"
            )
        return out + [f"  e.g. {x}" for x in self.examples]


def deduplicate(report: LoadReport, show: int = 3) -> Duplicates:
    """Drop repeated records from ``report.documents`` (first kept) and count the other kinds."""
    dup = Duplicates()
    seen: set[str] = set()
    kept: list[Document] = []
    texts_by_id: dict[str, set[str]] = defaultdict(set)
    ids_by_text: dict[str, set[str]] = defaultdict(set)
    for doc in report.documents:
        if doc.id in seen:
            dup.same_record += 1
            if len(dup.examples) < show:
                dup.examples.append(f"source id {doc.source_id!r} repeated")
            continue
        seen.add(doc.id)
        kept.append(doc)
        text_key = content_id(doc.title, doc.text)
        texts_by_id[doc.source_id].add(text_key)
        ids_by_text[text_key].add(doc.source_id)
    report.documents = kept
    multi = [sid for sid, texts in texts_by_id.items() if len(texts) > 1]
    dup.same_id_other_text = len(multi)
    dup.examples += [f"source id {sid!r} has {len(texts_by_id[sid])} texts" for sid in multi][:show]
    dup.same_text_other_id = sum(1 for ids in ids_by_text.values() if len(ids) > 1)
    return dup


def refuse_oversize(report: LoadReport, max_chars: int = DEFAULT_MAX_RECORD_CHARS) -> int:
    """Move documents over ``max_chars`` characters from ``report.documents`` to its skipped
    records, each named by its source id; returns how many."""
    kept: list[Document] = []
    refused = 0
    for doc in report.documents:
        size = len(doc.title) + len(doc.text)
        if size > max_chars:
            refused += 1
            report.skipped.append(
                SkippedRecord(
                    doc.source or "(corpus)",
                    None,
                    f"over the size limit: {doc.source_id!r} has {size:,} characters, "
                    f"more than {max_chars:,} (raise corpus.max_record_chars to keep it)",
                )
            )
        else:
            kept.append(doc)
    report.documents = kept
    return refused


def audit_load(report: LoadReport, max_chars: int = DEFAULT_MAX_RECORD_CHARS) -> Duplicates:
    """Refuse oversized records (they join ``report.skipped``), then drop repeated ones."""
    refuse_oversize(report, max_chars)
    return deduplicate(report)
