"""BioASQ snippet measures: character overlap between submitted and gold snippets.

A snippet is a character range of one section (``title`` or ``abstract``) of one PubMed article:
``{"document": pmid, "section", "begin", "end"}``, with ``begin``/``end`` the BioASQ
``offsetInBeginSection``/``offsetInEndSection`` (in the data, ``end`` is exclusive). Per question:
- **precision:** the characters of the submitted snippets that fall in a gold snippet of the
  same article and section, over all submitted characters;
- **recall:** the same overlap over all gold characters;
- **F1:** their harmonic mean;
- **average precision:** the precision of the first *i* submitted snippets at each *i* whose
  snippet is relevant, summed and divided by the smaller of 10 and the number of gold snippets
  (BioASQ since its eighth year, as for documents);
and over the questions: their means, MAP and GMAP (``exp`` of the mean ``log(AP + 1e-5)``).

Two readings (``official``):
- **official** (``--scoring official``): exactly the organisers' evaluator
  (``BioASQ/Evaluation-Measures``, ``QuestionAnswerEvaluator`` and ``EvaluatorTask1b``, Phase A,
  ``-e 8``), read from its source: a range counts ``end - begin + 1`` characters (both offsets
  inclusive, so touching snippets overlap by one); overlapping snippets of a list are merged in
  the order they first appear; a submitted snippet is relevant for average precision when any
  gold snippet comes from its article, whether or not they overlap (the source's ``if (...);``
  ends the test early); questions without a response are left out, every other one counts.
- **biorag**: ``end`` exclusive, every overlap merged, relevance = an actual overlap, the
  first :data:`MAX_SNIPPETS` snippets only.

The official reading scores the gold snippets as the golden file gives them (every one, its
offsets untouched: ``meta["gold_snippets_official"]`` of a BioASQ item), biorag's the distinct
snippet texts' own places (``meta["gold_snippet_spans"]``: stripped). The official figures
equal those the organisers' jar prints for the same submission, on every 2023 batch
(tests/eval/test_official_bioasq.py).

Submitted snippets come from the chunks a method rests on (:func:`chunk_snippets`). The pooled
BioASQ corpus (:func:`biorag.corpus.loaders.bioasq.load_bioasq`) records each snippet's offsets in
its article, so a chunk maps back to the article's coordinates.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from biorag.eval.metrics.snippets_official import official_snippet_scores

MAX_SNIPPETS = 10  # a submission's limit, as for documents
EPSILON = 0.00001  # GMAP's, as the official evaluator's


def _merged(spans: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[tuple[int, int]]]:
    by: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for s in spans:
        b, e = int(s["begin"]), int(s["end"])
        if e > b:
            by[(str(s["document"]), str(s.get("section") or ""))].append((b, e))
    out: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for key, ranges in by.items():
        ranges.sort()
        merged = [ranges[0]]
        for b, e in ranges[1:]:
            if b <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], e))
            else:
                merged.append((b, e))
        out[key] = merged
    return out


def _chars(spans: dict[tuple[str, str], list[tuple[int, int]]]) -> int:
    return sum(e - b for ranges in spans.values() for b, e in ranges)


def snippet_prf(
    gold: Sequence[Mapping[str, Any]], pred: Sequence[Mapping[str, Any]]
) -> tuple[float, float, float]:
    """Precision, recall and F1 of one question's submitted snippets (module docstring)."""
    g, p = _merged(gold), _merged(pred)
    overlap = 0
    for key, ranges in p.items():
        for b, e in ranges:
            overlap += sum(max(0, min(e, ge) - max(b, gb)) for gb, ge in g.get(key, []))
    pc, gc = _chars(p), _chars(g)
    precision = overlap / pc if pc else 0.0
    recall = overlap / gc if gc else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return precision, recall, f1


def _biorag_ap(gold: Sequence[Mapping[str, Any]], pred: Sequence[Mapping[str, Any]]) -> float:
    """Average precision (biorag): relevant = overlapping a gold snippet, over the smaller of
    10 and the number of (merged) gold snippets."""
    n_gold = sum(len(r) for r in _merged(gold).values())
    total = 0.0
    for i in range(len(pred)):
        if snippet_prf(gold, pred[i : i + 1])[0] > 0:
            total += snippet_prf(gold, pred[: i + 1])[0]
    return total / min(10, n_gold) if n_gold else 0.0


def snippet_measures(
    golds: Sequence[Sequence[Mapping[str, Any]]],
    preds: Sequence[Sequence[Mapping[str, Any]]],
    official: bool = True,
) -> dict[str, Any]:
    """Mean precision, recall, F1, MAP and GMAP over the questions (module docstring)."""
    if official:
        rows = [tuple(official_snippet_scores(g, p)) for g, p in zip(golds, preds, strict=True)]
        definition = "the BioASQ evaluator's snippet measures (-e 8), from its source"
    else:
        rows = []
        for g, p in zip(golds, preds, strict=True):
            cut = list(p)[:MAX_SNIPPETS]
            rows.append((*snippet_prf(g, cut), _biorag_ap(g, cut)))
        definition = "character overlap with the gold snippets (biorag's reading)"
    n = len(rows)
    # a NaN average precision (no gold snippet) adds 0 to MAP and to GMAP's log sum, as there
    mean = [sum(r[i] for r in rows if not math.isnan(r[i])) / n if n else 0.0 for i in range(4)]
    logs = sum(math.log(r[3] + EPSILON) for r in rows if not math.isnan(r[3]))
    gmap = math.exp(logs / n) if n and logs != 0 else 0.0
    return {
        "n": n,
        "mean_precision": mean[0],
        "mean_recall": mean[1],
        "mean_f1": mean[2],
        "map": mean[3],
        "gmap": gmap,
        "definition": definition,
    }


def chunk_snippets(
    chunks: Sequence[tuple[int, int, Mapping[str, Any]]],
) -> list[dict[str, Any]]:
    """The snippets (in article coordinates) that chunks cover: each chunk is ``(start, end,
    document)`` with the document's ``source_id``, ``spans`` (its snippets' ranges in its
    text) and ``metadata`` ``sections`` and ``offsets`` (each snippet's ``[begin, end]`` in its
    article section, or None), as the pooled BioASQ corpus stores them. Parts of chunks over a
    snippet without offsets are left out."""
    out: list[dict[str, Any]] = []
    for start, end, doc in chunks:
        meta = doc.get("metadata") or {}
        sections, offsets = meta.get("sections") or [], meta.get("offsets") or []
        for i, (s, e) in enumerate(doc.get("spans") or []):
            lo, hi = max(start, s), min(end, e)
            if hi <= lo or i >= len(offsets) or not offsets[i]:
                continue
            begin = int(offsets[i][0]) + (lo - s)
            out.append(
                {
                    "document": str(doc.get("source_id") or ""),
                    "section": sections[i] if i < len(sections) else "",
                    "begin": begin,
                    "end": begin + (hi - lo),
                }
            )
    return out
