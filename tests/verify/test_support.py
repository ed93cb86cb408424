"""A sentence's verdict over its citations, and citation recall and precision."""

from __future__ import annotations

from biorag.verify.models import PassageVerdict
from biorag.verify.support import citation_quality, union_label


def _v(pid: str, label: str) -> PassageVerdict:
    return PassageVerdict(passage_id=pid, label=label)  # type: ignore[arg-type]


def _s(*labels: str) -> dict:
    verdicts = [_v(f"c{i}", label).model_dump() for i, label in enumerate(labels)]
    whole = union_label([_v("", x) for x in labels])
    return {"text": "x", "chunk_ids": [f"c{i}" for i in range(len(labels))],
            "support": {"label": whole, "verdicts": verdicts}}  # fmt: skip


def test_the_union_takes_the_strongest_and_shows_a_contradiction():
    assert union_label([]) == "not_supported"
    assert union_label([_v("a", "not_supported"), _v("b", "supported")]) == "supported"
    assert union_label([_v("a", "partly_supported"), _v("b", "contradicted")]) == "contradicted"
    assert union_label([_v("a", "partly_supported"), _v("b", "not_supported")]) == (
        "partly_supported"
    )


def test_citation_recall_and_precision():
    q = citation_quality([
        _s("supported", "not_supported"),   # supported; one of two citations needed
        _s("partly_supported"),             # not supported; its citation supports in part
        _s(),                               # cites nothing
        {"text": "y", "chunk_ids": []},     # never checked
    ])  # fmt: skip
    assert (q["sentences"], q["supported"], q["uncited"], q["unverified"]) == (3, 1, 1, 1)
    assert q["recall"] == 1 / 3
    assert (q["citations"], q["needed"]) == (3, 2) and q["precision"] == 2 / 3


def test_nothing_to_divide_is_none():
    q = citation_quality([])
    assert q["recall"] is None and q["precision"] is None
