"""The load audit: skips counted by kind and written out in full, oversized records refused by
id, duplicates found and resolved as the report says."""

from __future__ import annotations

import json

from biorag.corpus.audit import (
    audit_load,
    deduplicate,
    kind_of,
    refuse_oversize,
    summarize_skips,
)
from biorag.corpus.loaders import load_corpus
from biorag.corpus.models import Document, LoadReport, SkippedRecord


def doc(sid: str, text: str) -> Document:
    return Document.create(source_id=sid, text=text, source="f.jsonl")


def test_kinds_generalize_locations_values_and_numbers():
    assert kind_of("line 2: field 'question' is empty") == "field '…' is empty"
    assert kind_of("invalid JSON: Expecting value") == "invalid JSON"
    assert (
        kind_of("question 'q9': duplicate id 'q9' (first at a.json line 3)") == "duplicate id '…'"
    )
    assert kind_of("not a JSON object (list)") == "not a JSON object"
    assert kind_of("over the size limit: 'x' has 9 characters") == "over the size limit"


def test_every_skip_is_counted_and_written_with_its_line(tmp_path):
    corpus = tmp_path / "c.jsonl"
    rows = ['{"id": "a", "text": "fine"}', "{oops", "[1]", '{"id": "b", "text": ""}']
    rows += ["{bad" + str(i) for i in range(30)]
    corpus.write_text("\n".join(rows) + "\n")
    loaded = load_corpus(corpus, "jsonl")
    out = tmp_path / "skipped.jsonl"
    summary = summarize_skips(loaded.skipped, out)
    assert summary.count == 33 == len(loaded.skipped)
    assert summary.by_kind == {"invalid JSON": 31, "not a JSON object": 1, "field '…' is empty": 1}
    assert sum(summary.by_kind.values()) == summary.count
    assert len(summary.first) == 5 and summary.first[0].startswith(f"{corpus}:2: invalid JSON")
    written = [json.loads(x) for x in out.read_text().splitlines()]
    assert [w["line"] for w in written] == [2, 3, 4, *range(5, 35)]
    lines = summary.lines()
    assert lines[0].startswith("skipped 33 record(s) (invalid JSON: 31,") and str(out) in lines[-1]
    assert summarize_skips([]).lines() == []
    unwritten = summarize_skips(loaded.skipped).lines()
    assert unwritten[-1] == "  ... and 28 more"


def test_records_over_the_limit_are_refused_by_id():
    report = LoadReport(documents=[doc("small", "x" * 10), doc("huge", "y" * 101)])
    assert refuse_oversize(report, max_chars=100) == 1
    assert [d.source_id for d in report.documents] == ["small"]
    (refused,) = report.skipped
    assert "'huge' has 101 characters, more than 100" in refused.reason
    assert "corpus.max_record_chars" in refused.reason


def test_duplicates_are_resolved_as_reported():
    report = LoadReport(
        documents=[
            doc("1", "alpha"),
            doc("1", "alpha"),  # the same record again: dropped
            doc("1", "alpha, corrected"),  # the same id, another text: kept
            doc("2", "beta"),
            doc("3", "beta"),  # the same text, another id: kept
        ]
    )
    dup = deduplicate(report)
    assert (dup.same_record, dup.same_id_other_text, dup.same_text_other_id) == (1, 1, 1)
    assert [d.source_id for d in report.documents] == ["1", "1", "2", "3"]
    text = "\n".join(dup.lines())
    assert "each kept once" in text and "every version kept" in text and "kept under each" in text


def test_audit_refuses_before_deduplicating():
    report = LoadReport(documents=[doc("h", "z" * 50), doc("h", "z" * 50)], skipped=[])
    dup = audit_load(report, max_chars=10)
    assert len(report.skipped) == 2 and dup.same_record == 0 and report.documents == []
    assert all(isinstance(s, SkippedRecord) for s in report.skipped)
