"""The BioASQ evaluator's snippet measures for one question, as its Java source computes them.

Read from ``BioASQ/Evaluation-Measures`` (``data/Snippet.java``,
``evaluation/QuestionAnswerEvaluator.java``: ``concatenateSnippets``,
``calculatePRForSnippets``, ``calculateAveragePrecisionSnippets``), challenge version 8 (``-e 8``,
BioASQ 8 on, as the document measures). The
quirks are kept on purpose, since they decide the official figure:
- both offsets are inclusive: a snippet has ``end - begin + 1`` characters and two snippets that
  touch overlap by one;
- overlapping (or touching) snippets of one article and section are merged, each merge taking
  the place of the first of the two, so the submitted order that average precision reads is
  the order of first appearance (the source's pairwise loop, kept as it is);
- a submitted snippet is relevant for average precision when any gold snippet comes from its
  article, overlapping or not;
- average precision is divided by the smaller of 10 and the number of gold snippets after
  merging (not a number without gold snippets: MAP then adds 0, and so does GMAP's log sum).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

__all__ = ["OfficialSnippetScores", "official_snippet_scores"]


@dataclass(frozen=True)
class _Snippet:
    document: str
    begin_section: str
    end_section: str
    begin: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.begin + 1

    @property
    def document_id(self) -> str:  # getDocumentOnlyID: the last part of the URL
        return self.document.split("/")[-1]

    def _same_fields(self, other: _Snippet) -> bool:
        return (
            self.begin_section == other.begin_section and self.end_section == other.end_section
        ) or (self.begin_section == "0" and other.begin_section == "abstract")

    def overlap(self, other: _Snippet) -> int:
        if not self._same_fields(other) or self.begin > other.end or self.end < other.begin:
            return 0
        return min(self.end, other.end) - max(self.begin, other.begin) + 1


class OfficialSnippetScores(NamedTuple):
    """One question's snippet precision, recall, F1 and average precision."""

    precision: float
    recall: float
    f1: float
    average_precision: float


def _field(name: Any) -> str:
    """A section name as ``readSnippets`` keeps it: what follows its first dot
    (``sections.0`` -> ``0``), the whole name without one."""
    text = str(name or "")
    return text[text.find(".") + 1 :]


def _snippet(s: Mapping[str, Any]) -> _Snippet:
    begin = _field(s.get("section"))
    end = _field(s["end_section"]) if "end_section" in s else begin
    return _Snippet(str(s["document"]), begin, end, int(s["begin"]), int(s["end"]))


def _concatenate(snippets: list[_Snippet]) -> None:
    """Merge in place as ``concatenateSnippets`` does (after its pass over snippet ``i``, that
    snippet overlaps no other, so only later snippets ever merge into it)."""
    i = 0
    while i < len(snippets):
        j = 0
        while j < len(snippets):
            if j != i:
                a, b = snippets[i], snippets[j]
                if (
                    a.document == b.document
                    and a.begin_section == b.begin_section
                    and a.end_section == b.end_section
                    and a.overlap(b) > 0
                ):
                    snippets[i] = replace(a, begin=min(a.begin, b.begin), end=max(a.end, b.end))
                    del snippets[j]
                    j = 0  # then the loop's j++
            j += 1
        i += 1


def _overlap(response: Sequence[_Snippet], gold: Sequence[_Snippet], by_id: bool) -> int:
    total = 0
    for sn in response:
        for g in gold:
            same = sn.document_id == g.document_id if by_id else sn.document == g.document
            if same:
                total += sn.overlap(g)
    return total


def official_snippet_scores(
    gold: Sequence[Mapping[str, Any]], response: Sequence[Mapping[str, Any]]
) -> OfficialSnippetScores:
    """The evaluator's measures of one question (module docstring); spans as in
    :mod:`biorag.eval.metrics.snippets`."""
    g = [_snippet(s) for s in gold]
    r = [_snippet(s) for s in response]
    _concatenate(g)
    _concatenate(r)
    if not r:
        return OfficialSnippetScores(0.0, 0.0, 0.0, 0.0)
    overlap = _overlap(r, g, by_id=True)
    resp_size, gold_size = sum(s.size for s in r), sum(s.size for s in g)
    precision = overlap / resp_size if resp_size else 0.0
    recall = overlap / gold_size if gold_size else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision or recall else 0.0
    ap = 0.0
    for i, sn in enumerate(r):
        if any(sn.document == gs.document for gs in g):  # relevant: its article has gold
            head = r[: i + 1]
            ap += _overlap(head, g, by_id=False) / sum(s.size for s in head)
    return OfficialSnippetScores(precision, recall, f1, ap / min(10.0, len(g)) if g else math.nan)
