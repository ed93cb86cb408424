"""BioASQ snippet measures: character overlap between submitted and gold snippets.

A snippet is a character range of one section (``title`` or ``abstract``) of one PubMed article:
``{"document": pmid, "section", "begin", "end"}`` (``end`` exclusive). Per question:
- **precision:** the characters of the submitted snippets that fall in a gold snippet of the
  same article and section, over all submitted characters;
- **recall:** the same overlap over all gold characters;
- **F1:** their harmonic mean.

Overlapping snippets on either side are merged first, so no character counts twice. The
measures are then averaged over the questions that have gold snippets with offsets. These are
BioASQ's definitions as its guidelines state them, computed by biorag; they have not been
compared with the organisers' evaluation tool on the same submissions.

Submitted snippets come from the chunks a method rests on (:func:`chunk_snippets`). The pooled
BioASQ corpus (:func:`biorag.corpus.loaders.bioasq.load_bioasq`) records each snippet's offsets in
its article, so a chunk maps back to the article's coordinates.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MAX_SNIPPETS = 10  # a submission's limit, as for documents


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


def snippet_measures(
    golds: Sequence[Sequence[Mapping[str, Any]]], preds: Sequence[Sequence[Mapping[str, Any]]]
) -> dict[str, Any]:
    """Mean precision, recall and F1 over the questions (each with gold snippets)."""
    rows = [snippet_prf(g, list(p)[:MAX_SNIPPETS]) for g, p in zip(golds, preds, strict=True)]
    n = len(rows)
    mean = [sum(r[i] for r in rows) / n if n else 0.0 for i in range(3)]
    return {
        "n": n,
        "mean_precision": round(mean[0], 4),
        "mean_recall": round(mean[1], 4),
        "mean_f1": round(mean[2], 4),
        "definition": "character overlap with the gold snippets (biorag's implementation)",
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
